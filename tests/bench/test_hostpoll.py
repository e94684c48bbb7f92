#!/usr/bin/env python3
"""Unit tests of the hostpoll experiments' poller switch: the plan
(tests/bench/plan.py: the polling iothread starts with poll-max-ns=0, the
experiment's setup sets it to 1 ms and its teardown back to 0) and the
guest side (tests/bench/guest_bench.py: the "iothread_poll" action, its
QMP exchange through scripts/qmp-agent's request files, which a fake agent
answers here, the teardown and what the report says of the arms).

    python3 tests/bench/test_hostpoll.py    prints "N passed, N failed";
                                            exit status 1 on any failure
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest_bench  # noqa: E402
import report  # noqa: E402
from checks import check, finish, plan  # noqa: E402


def check_plan(tag, p, vm, name, ids):
    base, control, test = ids
    e = next((e for e in p["experiments"] if e["name"] == name), None)
    check("%s: %s in the plan" % (tag, name), e is not None)
    if e is None:
        return
    for t in ids:
        check("%s: %s starts without polling" % (tag, t), "-object iothread,id=%s,poll-max-ns=0" % t in vm, vm)
    check("%s: no iothread polls from the start" % tag, not any("poll-max-ns=1000000" in a for a in vm), vm)
    check("%s: setup binds, then the poller on" % tag,
          [a["do"] for a in e["setup"]] == ["bind", "bind", "bind", "iothread_poll"]
          and e["setup"][-1] == {"do": "iothread_poll", "iothread": test, "poll_max_ns": 1000000}, e["setup"])
    check("%s: teardown turns it off" % tag,
          e.get("teardown") == [{"do": "iothread_poll", "iothread": test, "poll_max_ns": 0}], e.get("teardown"))
    check("%s: arms name their iothreads" % tag,
          [(a["role"], a["iothread"]) for a in e["arms"]] == [("base", base), ("control", control), ("test", test)],
          e["arms"])
    others = [x for x in p["experiments"] if x["name"] != name]
    check("%s: no other experiment has a teardown" % tag, not any(x.get("teardown") for x in others))


# ---- a fake scripts/qmp-agent with a fake QEMU behind it ---------------------

class FakeAgent:
    """Answers OUT/qmp/*.req as scripts/qmp-agent would, for a QEMU with
    the iothreads in self.objects. sticky: qom-set answers {} but changes
    nothing; silent: never answers."""

    def __init__(self, d, objects):
        self.dir, self.objects = d, dict(objects)
        self.sticky = self.silent = False
        self.log = []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def answer(self, cmd):
        a = cmd.get("arguments", {})
        obj = a.get("path", "").rsplit("/", 1)[-1]
        if cmd.get("execute") not in ("qom-set", "qom-get"):
            return {"error": {"class": "CommandNotFound", "desc": "The command %s has not been found"
                              % cmd.get("execute")}}
        if not a.get("path", "").startswith("/objects/") or obj not in self.objects:
            return {"error": {"class": "DeviceNotFound", "desc": "Device '%s' not found" % a.get("path")}}
        if a.get("property") != "poll-max-ns":
            return {"error": {"class": "GenericError", "desc": "Property 'iothread.%s' not found"
                              % a.get("property")}}
        if cmd["execute"] == "qom-get":
            return {"return": self.objects[obj]}
        v = a.get("value")
        if not isinstance(v, int) or v < 0:
            return {"error": {"class": "GenericError",
                              "desc": "poll-max-ns value must be in range [0, 9223372036854775807]"}}
        if not self.sticky:
            self.objects[obj] = v
        return {"return": {}}

    def serve(self):
        while not self.stop.is_set():
            for name in sorted(os.listdir(self.dir)):
                if not name.endswith(".req") or self.silent:
                    continue
                req = os.path.join(self.dir, name)
                with open(req) as f:
                    cmd = json.load(f)
                self.log.append(cmd)
                os.unlink(req)
                with open(req[:-4] + ".tmp", "w") as f:
                    f.write(json.dumps(self.answer(cmd)) + "\n")
                os.rename(req[:-4] + ".tmp", req[:-4] + ".resp")
            time.sleep(0.01)

    def close(self):
        self.stop.set()
        self.t.join()


def quiet(fn, *args, **kw):
    """fn's result (or exception) and what it logged."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            return fn(*args, **kw), None, buf.getvalue()
        except Exception as e:  # noqa: BLE001 (the tests look at it)
            return None, e, buf.getvalue()


def test_guest():
    with tempfile.TemporaryDirectory() as out:
        guest_bench.OUT = out
        _, e, _ = quiet(guest_bench.qmp, {"execute": "qom-get"})
        check("qmp without OUT/qmp fails", isinstance(e, RuntimeError) and "not booted by scripts/vm-run" in str(e), e)
        d = os.path.join(out, "qmp")
        os.makedirs(d)
        ag = FakeAgent(d, {"io0": 0, "io1": 0})
        try:
            p, _ = plan("--mode", "full", "--only", "hostpoll")
            e = p["experiments"][0]
            act = e["setup"][-1]
            _, err, txt = quiet(guest_bench.do_setup, [act])
            check("setup: poller on", err is None and ag.objects["io1"] == 1000000, (err, ag.objects))
            check("setup: qom-set then qom-get",
                  [c["execute"] for c in ag.log] == ["qom-set", "qom-get"]
                  and ag.log[0]["arguments"] == {"path": "/objects/io1", "property": "poll-max-ns",
                                                 "value": 1000000}, ag.log)
            check("setup: logs the value read back",
                  "setup: iothread io1 poll-max-ns 1000000 (qom-set, read back with qom-get)" in txt, txt)
            check("no request or answer left behind", os.listdir(d) == [], os.listdir(d))

            it, err, _ = quiet(guest_bench.arm_iothread, e["arms"][2])
            check("arm's iothread as QEMU reads it", it == {"id": "io1", "poll_max_ns": 1000000}, (it, err))
            it, _, _ = quiet(guest_bench.arm_iothread, e["arms"][0])
            check("base arm's iothread", it == {"id": "io0", "poll_max_ns": 0}, it)
            it, _, _ = quiet(guest_bench.arm_iothread, {"iothread": "nope"})
            check("an iothread QEMU does not have", str(it["poll_max_ns"]).startswith("unknown (")
                  and "DeviceNotFound" in it["poll_max_ns"], it)
            check("report: the arm's poll-max-ns",
                  report.arm_iothread_text({"id": "io1", "poll_max_ns": 1000000})
                  == "; iothread io1, poll-max-ns 1000000 during the experiment")
            check("report: an arm without iothread", report.arm_iothread_text(None) == "")

            runs = io.StringIO()
            _, err, txt = quiet(guest_bench.run_teardown, e, runs)
            check("teardown: poller off", err is None and ag.objects["io1"] == 0 and runs.getvalue() == "",
                  (err, ag.objects, runs.getvalue()))
            check("teardown: logged", "teardown: iothread io1 poll-max-ns 0" in txt, txt)

            # Refusals fail loudly.
            _, err, _ = quiet(guest_bench.do_setup, [{"do": "iothread_poll", "iothread": "io9", "poll_max_ns": 5}])
            check("unknown iothread: refused", isinstance(err, RuntimeError) and "refused" in str(err)
                  and "DeviceNotFound" in str(err), err)
            _, err, _ = quiet(guest_bench.do_setup, [{"do": "iothread_poll", "iothread": "io1", "poll_max_ns": -1}])
            check("bad value: refused", isinstance(err, RuntimeError) and "must be in range" in str(err), err)
            ag.sticky = True
            _, err, _ = quiet(guest_bench.do_setup, [act])
            check("qom-set taken but not applied: fails", isinstance(err, RuntimeError)
                  and "reads 0 after qom-set 1000000" in str(err), err)
            ag.sticky = False
            _, err, _ = quiet(guest_bench.do_setup, [{"do": "nonsense"}])
            check("unknown action fails", isinstance(err, RuntimeError) and "unknown action" in str(err), err)

            # A teardown that fails is written down for the report.
            runs = io.StringIO()
            bad = {"name": "hostpoll", "teardown": [{"do": "iothread_poll", "iothread": "io9", "poll_max_ns": 0}]}
            _, err, txt = quiet(guest_bench.run_teardown, bad, runs)
            recs = [json.loads(x) for x in runs.getvalue().splitlines()]
            check("failed teardown: a teardown_error record", err is None and len(recs) == 1
                  and recs[0]["exp"] == "hostpoll" and "DeviceNotFound" in recs[0]["teardown_error"], recs)
            check("failed teardown: logged loudly", txt.startswith("!! experiment hostpoll: teardown failed"), txt)
            runs = io.StringIO()
            quiet(guest_bench.run_teardown, {"name": "drv"}, runs)
            check("no teardown: nothing", runs.getvalue() == "")

            ag.silent = True
            _, err, _ = quiet(guest_bench.qmp, {"execute": "qom-get", "arguments": {}}, wait=0.3)
            check("no answer: fails", isinstance(err, RuntimeError) and "no answer" in str(err), err)
            check("no answer: request withdrawn", not any(n.endswith(".req") for n in os.listdir(d)), os.listdir(d))
        finally:
            ag.close()


def main():
    p, vm = plan("--mode", "full")
    check_plan("full", p, vm, "hostpoll", ("io0", "io0b", "io1"))
    p, vm = plan("--mode", "full", "--only", "hostpoll", "--reps", "3")
    check_plan("--only hostpoll", p, vm, "hostpoll", ("io0", "io0b", "io1"))
    p, vm = plan("--mode", "contention")
    check_plan("contention", p, vm, "hostpoll-rt", ("rio0", "rio0b", "rio1"))
    p, vm = plan("--mode", "headline")
    check("headline: no iothreads", not any("iothread" in a for a in vm), vm)
    test_guest()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
