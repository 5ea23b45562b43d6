"""regrtest_outcomes.py - run CPython's regression test driver (the
interpreter's own `python -m test`) and record every test's outcome.

    PYTHON regrtest_outcomes.py OUTFILE TEST_TIMEOUT [REGRTEST ARGS...]

e.g. `python3.11 regrtest_outcomes.py out.tsv 60 -v test_threading`. The
arguments after TEST_TIMEOUT go to test.libregrtest's main() unchanged;
run it without -j so that every test runs in this process, where the
recording hooks are, and without --timeout (which would share
faulthandler's one timer with ours).

OUTFILE gets one line per event as the test reports it, written and
flushed at once (a crash or a hang keeps what came before):

    TEST_ID <TAB> OUTCOME <TAB> DETAIL <TAB> SECONDS

OUTCOME is START when the test begins, then ok, SKIP, FAIL, ERROR, XFAIL
(expected failure) or XPASS (unexpected success); DETAIL is the skip
reason or the exception's last line, or for a subtest "subtest ..." and
its parameters; SECONDS the time since START. A test that takes more than
TEST_TIMEOUT seconds makes faulthandler print every thread's traceback
and exit the process (status 1): its START has no outcome after it, and
the caller calls that a hang. The last line, "<end> END", is written when
regrtest's main() returns or exits; without it the process died early
(or regrtest failed: an exception out of its main()). A subtest's result
is filed under its parent test's id, so a test with a failing subtest
reads FAIL even though unittest never reports the parent itself. Errors in
setUpClass/setUpModule come with ids like "setUpClass (test.x.Cls)".

Why not regrtest's own --junit-xml: its result class has no addSubTest,
so a test whose subtests fail leaves a nameless, outcome-less element.
Hooking unittest.TestResult's add* methods catches every result, whatever
result class the version's regrtest uses (all of them call the base
class's methods).

Doctests that a module runs through support.run_doctest (3.8's
test_generators) do not go through a TestResult; their failure shows in
regrtest's exit status, which the caller compares as well.

Python 3.8 to 3.13 (the versions whose regression tests tests/e2e/
regrtest.bats runs); it runs under the library, so it imports nothing
beyond what regrtest itself does.
"""

import faulthandler
import sys
import time
import unittest

out = open(sys.argv[1], "a", 1)  # line-buffered: each result on its own
test_timeout = float(sys.argv[2])
started = [0.0]


def _id(test):
    parent = getattr(test, "test_case", None)  # unittest's _SubTest
    target = parent if parent is not None else test
    try:
        return target.id()
    except Exception:
        return str(target)


def _detail(test, text):
    parts = []
    if getattr(test, "test_case", None) is not None:
        try:
            parts.append("subtest " + test._subDescription())
        except Exception:
            parts.append("subtest")
    if text:
        parts.append(text)
    return " ".join(parts)


def _last_line(err):
    try:
        return "%s: %s" % (err[0].__name__, str(err[1]).splitlines()[0])
    except Exception:
        try:
            return err[0].__name__
        except Exception:
            return ""


def _clean(text):
    # One line, no tabs inside a field.
    return text.replace("\n", " ").replace("\r", " ").replace("\t", " ")


def _record(test, outcome, detail=""):
    out.write("%s\t%s\t%s\t%.3f\n" % (
        _clean(_id(test)), outcome, _clean(_detail(test, detail))[:2000],
        time.time() - started[0]))


def _hook(name, outcome, detail_of):
    orig = getattr(unittest.TestResult, name)

    def hooked(self, test, *args):
        try:
            _record(test, outcome, detail_of(*args))
        except Exception:
            pass
        return orig(self, test, *args)

    setattr(unittest.TestResult, name, hooked)


_hook("addSuccess", "ok", lambda: "")
_hook("addSkip", "SKIP", lambda reason: str(reason))
_hook("addFailure", "FAIL", _last_line)
_hook("addError", "ERROR", _last_line)
_hook("addExpectedFailure", "XFAIL", lambda err: "")
_hook("addUnexpectedSuccess", "XPASS", lambda: "")

_orig_sub = unittest.TestResult.addSubTest


def _add_subtest(self, test, subtest, err):
    # Passing subtests are not reported (the parent's addSuccess is);
    # failing ones are, as FAIL or ERROR of the parent.
    try:
        if err is not None:
            if issubclass(err[0], test.failureException):
                outcome = "FAIL"
            else:
                outcome = "ERROR"
            _record(subtest, outcome, _last_line(err))
    except Exception:
        pass
    return _orig_sub(self, test, subtest, err)


unittest.TestResult.addSubTest = _add_subtest

_orig_start = unittest.TestResult.startTest
_orig_stop = unittest.TestResult.stopTest


def _start(self, test):
    started[0] = time.time()
    try:
        _record(test, "START")
    except Exception:
        pass
    try:
        faulthandler.dump_traceback_later(test_timeout, exit=True,
                                          file=sys.__stderr__)
    except Exception:
        pass
    return _orig_start(self, test)


def _stop(self, test):
    try:
        faulthandler.cancel_dump_traceback_later()
    except Exception:
        pass
    return _orig_stop(self, test)


unittest.TestResult.startTest = _start
unittest.TestResult.stopTest = _stop

sys.argv = [sys.argv[0]] + sys.argv[3:]
try:
    from test.libregrtest.main import main
except ImportError:
    from test.libregrtest import main
# regrtest ends with sys.exit(): the <end> line says it got there. A
# process that dies, is killed, or fails inside regrtest itself (an
# exception out of main(), e.g. its stdout gone) leaves none.
try:
    main()
except SystemExit:
    out.write("<end>\tEND\t\t0\n")
    raise
out.write("<end>\tEND\t\t0\n")
