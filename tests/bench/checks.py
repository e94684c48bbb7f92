"""What the bench's python tests share (tests/bench/test_*.py): check()
counts a passed or failed condition, finish() prints the closing
"N passed, N failed" line and gives the exit status, plan() runs plan.py."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

PASSED, FAILED = [0], [0]


def check(name, cond, detail=""):
    if cond:
        PASSED[0] += 1
    else:
        FAILED[0] += 1
        print("FAIL %s %s" % (name, detail))


def finish():
    print("%d passed, %d failed" % (PASSED[0], FAILED[0]))
    return 1 if FAILED[0] else 0


def plan(*args, may_fail=False):
    """Run plan.py with these arguments: (its plan.json, its stdout lines).
    If plan.py fails: raise, or with may_fail return (None, the
    CompletedProcess) so that a test can look at the refusal."""
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, os.path.join(HERE, "plan.py"), "--ko", "k", "--repo", "r"]
                           + list(args) + [d], capture_output=True, text=True, check=not may_fail)
        if r.returncode:
            return None, r
        with open(os.path.join(d, "plan.json")) as f:
            return json.load(f), r.stdout.splitlines()
