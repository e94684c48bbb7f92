"""The check counter the bench's python tests share (tests/bench/test_*.py):
check() counts a passed or failed condition, finish() prints the closing
"N passed, N failed" line and gives the exit status."""

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
