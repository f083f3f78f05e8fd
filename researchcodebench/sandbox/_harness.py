"""The code that runs INSIDE the sandbox, under the evaluation interpreter (Python 3.11+, stdlib only).

It is never imported by the host: the runner passes this file's source to ``python -I -B -c`` (so it works
in any backend, a container included, without mounting anything) with one of three commands:

``run SPEC_JSON``
    A cold run. Reads a per-run nonce from stdin, prepares the interpreter (below), then runs the test
    described by the spec (``entry``: normally ``paper2code_test.py``) exactly as ``python ENTRY`` would in
    the task folder (``__main__``, ``sys.argv``, ``sys.path[0]``), and ends the process itself.
``serve PRELOAD_JSON``
    The warm fork server: prepares the interpreter once, then reads one JSON request per line on stdin and
    answers one JSON line per request on stdout. Each ``run`` request forks a child that does exactly what
    ``run`` does after the preparation. After each run the server kills every other process of its pid
    namespace and proves that nothing of the run is left in its own view (``_slate_clean``); a server that
    cannot prove it answers ``clean: false`` and the host retires it.
``resolve SPEC_JSON``
    Only the screen's resolution step (below) for a batch of chains, printed as JSON (the screen's
    false-positive corpus uses it; nothing of a task runs).

Preparation (``prepare``): the heavy libraries are imported and exercised once and unittest is hooked at the
class level: tests run, failed and skipped are counted, every failure is also streamed at once as a
``FAIL_MARK`` line so that it cannot be taken back, and how every test method ended is recorded by the
harness's own wrapper of ``TestCase._callTestMethod`` (``record["tests"]``), not read from result objects a
run can reach.

Fresh state for every run (``_isolate``, local sandbox; docs/sandbox.md): the run gets a user namespace of
its own (same uid) with new mount, IPC and pid namespaces. Inside them a fresh ``/proc`` shows only the run's
processes, ``/tmp``, ``/dev/shm`` and ``/task`` are new size-capped tmpfs mounts (the task folder is copied
from the read-only view at ``/run/rcb-src``), ``/dev`` and the output files are read-only, no further user
namespace can be made, and every capability is dropped before any task code runs. Everything a run writes
lives in those mounts and is gone, memory included, when its last process ends. A docker run is a new
container and needs none of this (the spec's ``isolation`` is null).

Integrity (docs/integrity.md), for the run of a completion:

* the screen's resolution step (``resolve_chains``): every attribute chain the host's screen found rooted at
  an imported module is resolved against the real libraries, before any task code runs; a chain through a
  module or object the screen denies (a library's own ``sys.modules``, ``inspect.currentframe`` under another
  name) refuses the completion, which then never runs;
* a PEP 578 audit hook (``_AuditHook``), installed before the task's modules import and impossible to remove,
  ends the run as tampering when code on the completion's own lines (directly, or through a library it
  called) reaches what protects the confirmation and the sandbox: frames, the garbage collector's object
  lists, tracing or profiling hooks, the code or defaults of the test's and the oracles' functions, the
  oracle or test files, code made from text or bytes, processes, signals, ctypes, pickle loading, a file
  descriptor, or a file Python would import;
* a test counts as passed only when the harness saw its method return normally with no failing subtest:
  unittest's internal stop signal, a skip raised by the completion and a failure a patched result object did
  not record leave a run that reports success with ``silenced`` tests.

What holds is outside this file: the runner confirms every pass against an impossible variant of its test
(``researchcodebench/variants.py``), which the reference fails; a coverage run (``trace`` in the spec) says
which tests execute each snippet's lines.

Structured outcome: before the test starts, ``START_MARK nonce`` goes to fd 2; at the end one ``RESULT_MARK
{json}`` line holding the nonce goes to a private duplicate of fd 2, written with ``os.write`` and
``json.dumps`` captured when this file loaded, and the process ends with ``os._exit``. A missing result line
means the run ended early. Fail-fast (``failfast`` in the spec, for runners that do not confirm passes): every
``TextTestRunner.run`` (``unittest.main`` included) stops at its first failing test.
"""

import json
import os
import resource
import select
import signal
import sys
import time
import traceback

# Captured before any test or completion code runs: a patched os.write, os._exit or json.dumps cannot
# rewrite or suppress the harness's own result line.
_write = os.write
_exit = os._exit
_dumps = json.dumps
_fstat = os.fstat
_dup = os.dup
_getframe = sys._getframe
_realpath = os.path.realpath
_getcwd = os.getcwd

START_MARK = "@@RCB-START@@"
RESULT_MARK = "@@RCB-RESULT@@"
#: One line per failing test, streamed when unittest records it (the runner counts them).
FAIL_MARK = "@@RCB-FAIL@@"
_MESSAGE_LIMIT = 2000
#: Exit status of a run whose namespaces or task folder could not be set up (an infrastructure failure).
SETUP_FAILED = 113
#: The warm server's answer channel; closed in every child so that a run cannot forge answers.
_PROTOCOL_FD = None
#: Where the current run writes its result and failure lines (set per run, before any task code runs).
_CHANNEL = [2]


def _emit(line, fd=None):
    data = ("\n" + line + "\n").encode("utf-8", "replace")
    try:
        _write(_CHANNEL[0] if fd is None else fd, data)
    except OSError:
        pass


def _apply_limits(limits):
    """Set soft and hard rlimits (an unprivileged process cannot raise a hard limit again)."""
    pairs = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, limits.get("cpu_s")),
        (resource.RLIMIT_FSIZE, limits.get("file_size_bytes")),
        (resource.RLIMIT_NOFILE, limits.get("open_files")),
        (resource.RLIMIT_AS, limits.get("address_space_bytes")),
        (resource.RLIMIT_NPROC, limits.get("nproc")),
    ]
    for which, value in pairs:
        if value is None:
            continue
        value = int(value)
        try:
            _soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY and value > hard:
                value = hard
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def _exception_info(exc):
    """The final exception as plain data (type name, message, missing module for ModuleNotFoundError)."""
    cls = type(exc)
    name = cls.__name__ if cls.__module__ == "builtins" else cls.__module__ + "." + cls.__qualname__
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable>"
    info = {"type": name, "message": message[:_MESSAGE_LIMIT], "module": None, "builtin_base": None}
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            info["builtin_base"] = klass.__name__
            break
    if isinstance(exc, ModuleNotFoundError):
        info["module"] = exc.name
    return info


# ---------------------------------------------------------------- reading objects without running their code


def _is_module(value):
    # issubclass on the value's real type: isinstance would ask the value for __class__, which runs its code.
    return issubclass(type(value), type(sys))


def _is_type(value):
    return issubclass(type(value), type)


def _is_function(value):
    return type(value) is type(_emit)


_TYPE_DICT = type.__dict__["__dict__"].__get__


def _text(value):
    """``value`` when it is a plain str, else a placeholder (never calls code of the value's class)."""
    return value if type(value) is str else "?"


def _qualified(cls):
    return _text(type.__dict__["__module__"].__get__(cls)) + "." + _text(cls.__qualname__)


# ---------------------------------------------------------------- counting tests

#: How a test method can end, as the harness itself saw it (``record["tests"]``, docs/integrity.md).
PASSED = "passed"
FAILED = "failed"
ERROR = "error"
SUBTEST_FAILED = "failed in a subtest"
SKIPPED = "skipped"
EXPECTED_FAILURE = "expected failure"
#: unittest's internal stop signal raised inside the test (its runner would count the test a success).
STOPPED = "stopped (unittest's internal stop signal)"
SKIPPED_BY_COMPLETION = "skipped by the completion"
#: Endings that leave a successful run successful.
_QUIET = frozenset({PASSED, SKIPPED, EXPECTED_FAILURE})
#: Endings unittest alone would count a success or a skip: the harness calls them tampering.
_SILENCING = frozenset({STOPPED, SKIPPED_BY_COMPLETION})
#: Endings the harness records and hides from unittest (the rest go on to unittest as they were raised).
_HIDDEN = frozenset({FAILED, ERROR, STOPPED, SKIPPED_BY_COMPLETION})
#: Longest test name kept whole in a record (longer ones are cut and given a digest).
_NAME_LIMIT = 120


class _Tally:
    """Totals over every unittest run of the script, the first error/failure seen, and how every test method
    ended (``outcomes``), seen by the harness's own hook on ``TestCase._callTestMethod`` rather than by the
    result objects a run can reach and patch."""

    def __init__(self):
        self.completed_real = set()
        self.early_exit = False
        self.unittest = False
        #: Whether every TextTestRunner.run stops at its first failing test (a runner that confirms passes
        #: runs every test: docs/integrity.md).
        self.failfast = True
        self.run = 0
        self.failed = 0
        self.skipped = 0
        #: Errors and failures seen by the hooks themselves (not the result object's lists).
        self.noted = 0
        self.first_error = None
        self.first_failure = None
        #: test id -> how it ended; a test run more than once keeps the first ending that is not a pass.
        self.outcomes = {}
        #: test id -> the ending of a subtest of the method running now that was not a pass.
        self.subtests = {}
        #: The test whose code runs now (``TestCase.run``), for the coverage trace.
        self.current = None
        #: (test id, exception) of every test method or subtest that failed, recorded here and hidden from
        #: unittest (``hide``): the run goes on as if it had passed, so nothing later in it can tell.
        self.hidden = []
        #: Called with a status to end the run at once (``run_test`` sets it; fail-fast ends the run so).
        self.finish = None

    def note(self, exc_info, failure):
        if exc_info is None or exc_info[1] is None:
            return
        self.noted += 1
        _emit(FAIL_MARK)
        if isinstance(exc_info[1], SystemExit) and _raised_from(exc_info[2], self.completed_real):
            # unittest turns SystemExit into a test error; from model code it is still an early exit.
            self.early_exit = True
        if failure:
            if self.first_failure is None:
                self.first_failure = _exception_info(exc_info[1])
        elif self.first_error is None:
            self.first_error = _exception_info(exc_info[1])

    def ended(self, key, outcome):
        if self.outcomes.get(key, PASSED) == PASSED:
            self.outcomes[key] = outcome

    def ending(self, test, exc):
        """How a test (or subtest) that raised ``exc`` ended. Reads only the exception's real type and
        traceback, and unittest's own ``_Outcome`` of the test."""
        import unittest

        kind = type(exc)
        if issubclass(kind, unittest.SkipTest):
            return SKIPPED_BY_COMPLETION if _raised_from(exc.__traceback__, self.completed_real) else SKIPPED
        if issubclass(kind, unittest.case._ShouldStop):
            return STOPPED
        if _expecting_failure(test):
            return EXPECTED_FAILURE
        return FAILED if issubclass(kind, AssertionError) else ERROR

    def silenced(self):
        """Tests that ended by a signal of unittest's own or a skip the completion raised."""
        return sorted(key for key, outcome in self.outcomes.items() if outcome in _SILENCING)

    def failing(self):
        """Tests that did not end quietly (see ``_QUIET``)."""
        return sorted(key for key, outcome in self.outcomes.items() if outcome not in _QUIET)

    def hide(self, key, exc):
        """Record a failure of ``key`` and keep it from unittest: a run where honest tests fail (the
        confirmation of a pass against an impossible variant) must look, from inside, like one where they
        pass. It is streamed at once (``FAIL_MARK``) on the private channel, and fail-fast ends the run."""
        self.hidden.append((key, exc))
        if self.first_failure is None and self.first_error is None:
            info = _exception_info(exc)
            if issubclass(type(exc), AssertionError):
                self.first_failure = info
            else:
                self.first_error = info
        _emit(FAIL_MARK)
        if self.failfast and self.finish is not None:
            self.finish(1)


_TALLY = _Tally()


def _expecting_failure(test):
    try:
        outcome = dict.get(object.__getattribute__(test, "__dict__"), "_outcome")
        return outcome is not None and bool(
            dict.get(object.__getattribute__(outcome, "__dict__"), "expecting_failure")
        )
    except Exception:
        return False


def _test_id(test):
    """``Class.method`` of a TestCase (``module.Class.method`` outside the test script), read from the
    instance's real class and dict without running its code; long names are cut and given a digest."""
    cls = type(test)
    module = _text(type.__dict__["__module__"].__get__(cls))
    name = _text(type.__dict__["__qualname__"].__get__(cls))
    try:
        method = _text(dict.get(object.__getattribute__(test, "__dict__"), "_testMethodName", "?"))
    except Exception:
        method = "?"
    key = f"{name}.{method}" if module == "__main__" else f"{module}.{name}.{method}"
    if len(key) > _NAME_LIMIT:
        import hashlib

        key = key[: _NAME_LIMIT - 10] + "~" + hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:9]
    return key


def _hook_unittest():
    """Count tests, remember the first error/failure of every ``TextTestRunner.run`` and record how every test
    method ends (installed once, before any task code, at the class level)."""
    import contextlib
    import unittest

    tally = _TALLY
    original_run = unittest.TextTestRunner.run
    original_error = unittest.TestResult.addError
    original_failure = unittest.TestResult.addFailure
    original_subtest = unittest.TestResult.addSubTest
    original_unexpected = unittest.TestResult.addUnexpectedSuccess
    original_call = unittest.TestCase._callTestMethod
    original_case_run = unittest.TestCase.run
    original_sub_test = unittest.TestCase.subTest
    sentinel = unittest.case._subtest_msg_sentinel
    is_case = lambda test: issubclass(type(test), unittest.TestCase)  # noqa: E731

    def run(self, test):
        # Fail-fast (when asked): once a test has failed the run's verdict is "failed" whatever the later
        # tests do (a failure the harness hid ends the run itself: ``_Tally.hide``). The caller's own setting
        # is restored afterwards.
        chosen = getattr(self, "failfast", False)
        if tally.failfast:
            self.failfast = True
        try:
            result = original_run(self, test)
        finally:
            self.failfast = chosen
        tally.unittest = True
        tally.run += result.testsRun
        tally.failed += (
            len(result.failures) + len(result.errors) + len(getattr(result, "unexpectedSuccesses", ()))
        )
        tally.skipped += len(getattr(result, "skipped", ()))
        return result

    def case_run(self, result=None):
        outer, tally.current = tally.current, _test_id(self)
        try:
            return original_case_run(self, result)
        finally:
            tally.current = outer

    def call_test_method(self, method):
        key = _test_id(self)
        tally.subtests.pop(key, None)
        try:
            value = original_call(self, method)
        except BaseException as exc:
            tally.subtests.pop(key, None)
            ending = tally.ending(self, exc)
            tally.ended(key, ending)
            if ending in _HIDDEN and issubclass(type(exc), Exception):
                tally.hide(key, exc)
                return None
            raise
        tally.ended(key, tally.subtests.pop(key, PASSED))
        return value

    @contextlib.contextmanager
    def sub_test(self, msg=sentinel, **params):
        with original_sub_test(self, msg, **params):
            try:
                yield
            except BaseException as exc:
                ending = tally.ending(self, exc)
                if ending == SKIPPED or not issubclass(type(exc), Exception):
                    raise
                key = _test_id(self)
                kept = ending if ending in _SILENCING else SUBTEST_FAILED
                tally.subtests.setdefault(key, kept)
                if ending not in _HIDDEN:
                    raise
                tally.hide(key, exc)

    def add_error(self, test, err):
        tally.note(err, failure=False)
        if is_case(test):
            tally.ended(_test_id(test), ERROR)
        return original_error(self, test, err)

    def add_failure(self, test, err):
        tally.note(err, failure=True)
        if is_case(test):
            tally.ended(_test_id(test), FAILED)
        return original_failure(self, test, err)

    def add_subtest(self, test, subtest, err):
        if err is not None:
            tally.note(err, failure=issubclass(err[0], test.failureException))
            if is_case(test):
                tally.ended(_test_id(test), SUBTEST_FAILED)
        return original_subtest(self, test, subtest, err)

    def add_unexpected_success(self, test):
        tally.noted += 1
        _emit(FAIL_MARK)
        return original_unexpected(self, test)

    unittest.TextTestRunner.run = run
    unittest.TestCase.run = case_run
    unittest.TestCase._callTestMethod = call_test_method
    unittest.TestCase.subTest = sub_test
    unittest.TestResult.addError = add_error
    unittest.TestResult.addFailure = add_failure
    unittest.TestResult.addSubTest = add_subtest
    unittest.TestResult.addUnexpectedSuccess = add_unexpected_success


def _raised_from(tb, files):
    """True if any frame of the traceback runs code of one of ``files`` (absolute real paths)."""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename and _realpath(filename) in files:
            return True
        tb = tb.tb_next
    return False


def _trace(regions, workdir, tally):
    """Record, for the reference's coverage run, which tests execute a line of each region (``regions``:
    ``[{"file", "first", "last"}]``, task-relative paths). Returns a function giving ``{index: [test ids]}``
    (``<module>`` for lines run outside any test: at import)."""
    import threading

    files = {}
    for region in regions:
        path = os.path.join(workdir, region["file"])
        files[path] = files[_realpath(path)] = region["file"]
    hits = {}

    def local(frame, event, _arg):
        if event == "line":
            hits.setdefault((frame.f_code.co_filename, frame.f_lineno), set()).add(
                tally.current or "<module>"
            )
        return local

    def tracer(frame, event, _arg):
        if frame.f_code.co_filename in files:
            return local(frame, "line", None)
        return None

    sys.settrace(tracer)
    threading.settrace(tracer)

    def regions_run():
        sys.settrace(None)
        found = {}
        by_file = {}
        for (filename, line), tests in hits.items():
            by_file.setdefault(files.get(filename), {}).setdefault(line, set()).update(tests)
        for index, region in enumerate(regions):
            lines = by_file.get(region["file"], {})
            tests = set()
            for line in range(int(region["first"]), int(region["last"]) + 1):
                tests |= lines.get(line, set())
            found[str(index)] = sorted(tests)
        return found

    return regions_run


# ---------------------------------------------------------------- preparing the interpreter


def _warm_up():
    """Exercise lazily imported paths once (e.g. torch.testing pulls in sympy on first use, about 0.6 s), so
    that runs start with them loaded. Warm and cold runs both do this before the guard's snapshot."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.set_num_threads(1)
            x = torch.ones(2, requires_grad=True)
            (torch.nn.functional.softmax(x * 2, 0)).sum().backward()
            torch.testing.assert_close(x.detach(), torch.ones(2))
        except Exception:
            pass
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.testing.assert_allclose(numpy.ones(2), numpy.ones(2))
        except Exception:
            pass


def prepare(preload):
    """Import ``preload`` (what is missing is the test's own ModuleNotFoundError), warm up, hook unittest.
    Returns the names imported."""
    loaded = []
    for name in preload:
        try:
            __import__(name)
            loaded.append(name)
        except Exception:
            pass
    _warm_up()
    import importlib.machinery  # noqa: F401 - the audit hook reads its suffixes
    import unittest  # noqa: F401 - every run hooks it; importing once here keeps forks cheap

    _hook_unittest()
    import gc

    # Everything made so far goes to the collector's permanent generation: a run's collections never walk
    # (and so never copy) the prepared interpreter's objects.
    gc.collect()
    gc.freeze()
    return loaded


MADV_COLLAPSE = 25
_HUGE = 1 << 21


def _collapse_memory():
    """Back the prepared interpreter's anonymous memory with huge pages where the kernel can (Linux 6.1+,
    ``MADV_COLLAPSE``; nothing happens elsewhere). A fork copies one page-table entry per 2 MiB instead of
    512, and its exit frees as few: with torch loaded a fork and exit take about a quarter of the time
    (bench/eval_speed.py). A run that writes to such a page copies only the 4 KiB it writes, as before.
    Returns the bytes collapsed."""
    try:
        ctypes, libc = _libc()
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as handle:
            lines = handle.read().splitlines()
    except (OSError, AttributeError):
        return 0
    collapsed = 0
    for line in lines:
        fields = line.split()
        if len(fields) < 5 or fields[1][1] != "w" or fields[1][3] != "p":
            continue
        if len(fields) > 5 and fields[5] != "[heap]":
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start, end = (low + _HUGE - 1) & ~(_HUGE - 1), high & ~(_HUGE - 1)
        if end > start and madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += end - start
    return collapsed


# ---------------------------------------------------------------- fresh namespaces per run

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LIBC = []


class SetupError(Exception):
    """The run's namespaces or task folder could not be set up (the run must not start)."""


def _libc():
    if not _LIBC:
        import ctypes

        _LIBC.append((ctypes, ctypes.CDLL(None, use_errno=True)))
    return _LIBC[0]


def _call(what, result):
    if result != 0:
        ctypes, _ = _libc()
        errno = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(errno)} (errno {errno})")


def _put(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def _mount(source, target, fstype, flags, data=None):
    _ctypes, libc = _libc()
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _call(f"mount {target}", libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)))


def _remount_read_only(target):
    """A read-only view of an existing mount; the flags it was made with must be kept (they are locked)."""
    last = None
    for extra in (MS_NOSUID | MS_NODEV | MS_NOEXEC, MS_NOSUID | MS_NODEV, MS_NOSUID, 0):
        try:
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | extra)
            return
        except SetupError as exc:
            last = exc
    raise SetupError(f"cannot make {target} read-only: {last}")


def _drop_capabilities():
    ctypes, libc = _libc()

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _call("capset", libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()))
    _call("no_new_privs", libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    with open("/proc/self/status") as handle:
        status = handle.read()
    for field in ("CapEff:", "CapPrm:", "CapBnd:"):
        value = status.split(field, 1)[1].split()[0]
        if int(value, 16) != 0:
            raise SetupError(f"capabilities left after dropping them ({field} {value})")


OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = 0o2000000
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
#: open_tree(2) and move_mount(2): the same numbers on x86_64 and arm64.
_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429


def _interpreter_paths():
    """The folders the interpreter and its libraries live in."""
    found = set()
    for path in (sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path):
        if path and os.path.isabs(path) and os.path.exists(path):
            found.add(_realpath(path) if os.path.isdir(path) else os.path.dirname(_realpath(path)))
    return found


def _stash(targets):
    """Detached copies of the interpreter's folders that lie under ``targets`` (the folders about to get a
    fresh tmpfs), to put back into the fresh ones (``_restore``): an environment built under /tmp stays."""
    _ctypes, libc = _libc()
    under = sorted(p for p in _interpreter_paths() if any(p.startswith(t + "/") for t in targets))
    outermost = [p for i, p in enumerate(under) if not any(p.startswith(q + "/") for q in under[:i])]
    kept = []
    for path in outermost:
        fd = libc.syscall(
            _SYS_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE
        )
        if fd < 0:
            _call(f"open_tree {path}", -1)
        kept.append((path, fd))
    return kept


def _restore(kept):
    _ctypes, libc = _libc()
    for path, fd in kept:
        os.makedirs(path, exist_ok=True)
        _call(
            f"move_mount {path}",
            libc.syscall(_SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH),
        )
        os.close(fd)


def _mounts(iso):
    """In the run's first process (pid 2 of its pid namespace): its own /proc, tmpfs and read-only views."""
    # No process of the run can make a user namespace (and so no mount, pid or network namespace) again.
    # Written through the sandbox's /proc, before the run's own one covers it (that one has no /proc/sys).
    _put("/proc/sys/user/max_user_namespaces", "0")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _remount_read_only("/dev")
    fresh = (
        ("/tmp", iso["tmp_mb"], "1777"),
        ("/dev/shm", iso["shm_mb"], "1777"),
        (iso["workdir"], iso["task_dir_mb"], "755"),
    )
    kept = _stash([target for target, _size, _mode in fresh])
    for target, size, mode in fresh:
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(size)}m,mode={mode}")
    _restore(kept)
    for path in iso.get("read_only", ()):
        _remount_read_only(path)
    others = [n for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, os.getpid())]
    if others:
        raise SetupError(f"the run's /proc shows processes that are not the run's: {others}")


def _copy_task(source, workdir):
    """Copy the read-only task view into the run's private, size-limited task folder."""
    import shutil

    try:
        shutil.copytree(source, workdir, symlinks=True, dirs_exist_ok=True)
    except (OSError, shutil.Error) as exc:
        raise SetupError(f"rcb-task: cannot copy the task folder into {workdir}: {exc}") from exc


def _sleeper():
    for path in ("/usr/bin/sleep", "/bin/sleep"):
        if os.path.exists(path):
            return path
    raise SetupError("no sleep program for the run's init process")


def _mirror(status):
    """End this process the way the run's process ended (exit status or signal)."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        except (OSError, ValueError):
            pass
        _exit(128 + number)
    _exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _isolate(iso):
    """Put the rest of this run into fresh namespaces (see the module docstring). Returns in the run's
    process; the calling process waits for it and ends with its status, never returning."""
    _ctypes, libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    sleeper = _sleeper()
    try:
        _call("unshare", libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID))
        _put("/proc/self/setgroups", "deny")
        _put("/proc/self/uid_map", f"{uid} {uid} 1")
        _put("/proc/self/gid_map", f"{gid} {gid} 1")
        _mount("none", "/", None, MS_REC | MS_PRIVATE)
        # pid 1 of the run: a sleeper, so that the test itself keeps ordinary signal semantics.
        init = os.posix_spawn(sleeper, [sleeper, "infinity"], {})
    except (SetupError, OSError) as exc:
        _setup_failed(exc)
    pid = os.fork()
    if pid == 0:
        try:
            # A session of its own: no signal the run sends to its process group reaches this process.
            os.setsid()
            _mounts(iso)
            _copy_task(iso["source"], iso["workdir"])
            _drop_capabilities()
            os.chdir(iso["workdir"])
        except (SetupError, OSError, ValueError, IndexError) as exc:
            _setup_failed(exc)
        return
    _done, status = os.waitpid(pid, 0)
    try:
        os.kill(init, signal.SIGKILL)
        os.waitpid(init, 0)
    except OSError:
        pass
    _mirror(status)


def _setup_failed(exc):
    try:
        sys.stderr.write(f"rcb-isolation: {exc}\n")
        sys.stderr.flush()
    except Exception:
        pass
    _exit(SETUP_FAILED)


# ---------------------------------------------------------------- the screen's resolution step


def _module_name(module):
    return _text(dict.get(module.__dict__, "__name__"))


#: What ``_Resolver._step`` returns for an attribute that cannot be looked up (None is a value).
_UNRESOLVED = object()


class _Resolver:
    """Resolves attribute chains against the real libraries (the rules come from the host's screen,
    ``screen.policy``): a chain may not pass through a module the screen denies, a member of ``os`` or ``sys``
    outside their harmless attributes, a member of ``torch._C`` outside its list, or one of the dangerous
    objects, whatever the library calls them; nor call a code constructor. Each refusal names its kind."""

    def __init__(self, policy):
        import importlib

        self.import_module = importlib.import_module
        self.partial = {k: set(v) for k, v in policy.get("partial", {}).items()}
        self.partial_kinds = dict(policy.get("partial_kinds", {}))
        self.denied = {kind: tuple(names) for kind, names in policy.get("denied", {}).items()}
        self.members = {k: set(v) for k, v in policy.get("members", {}).items()}
        self.members_kind = policy.get("members_kind", "")
        self.local = set(policy.get("local", ()))
        self.protected = set(policy.get("protected", ()))
        #: id(object) -> (dotted name, kind)
        self.dangerous = {}
        for kind, names in policy.get("dangerous", {}).items():
            for dotted in names:
                obj = self._lookup(dotted)
                if obj is not None:
                    self.dangerous[id(obj)] = (dotted, kind)
        self.called = {}
        for dotted in policy.get("called", ()):
            obj = self._lookup(dotted)
            if obj is not None:
                self.called[id(obj)] = dotted

    def _lookup(self, dotted):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = self.import_module(".".join(parts[:cut]))
            except Exception:
                continue
            try:
                for part in parts[cut:]:
                    obj = getattr(obj, part)
            except Exception:
                return None
            return obj
        return None

    @staticmethod
    def _under(name, prefixes):
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    def module_refusal(self, name):
        """Why a chain may not pass through the module called ``name`` (None: it may)."""
        top = name.split(".", 1)[0]
        if name in self.protected or top in self.protected or top == "__main__":
            return f"the module {name} belongs to the test or holds an oracle"
        if top in self.local:
            return None
        for kind, prefixes in self.denied.items():
            if self._under(name, prefixes):
                return f"the module {name} ({kind})"
        return None

    def _partial_name(self, module):
        return "os" if module in ("os", "posix", "nt") else module

    def object_refusal(self, obj):
        """Why a chain may not reach ``obj`` by what it is: a dangerous object, or a function or class that
        belongs to a denied module (``numpy.testing.TestCase`` is unittest's), or None."""
        found = self.dangerous.get(id(obj))
        if found is None:
            func = getattr(type(obj), "__func__", None) and getattr(obj, "__func__", None)
            found = self.dangerous.get(id(func)) if func is not None else None
        if found is not None:
            return f"use of {found[0]} ({found[1]})"
        if _is_module(obj) or not (_is_type(obj) or callable(obj)):
            return None
        if _is_type(obj) and issubclass(obj, BaseException):
            # Exceptions are caught and raised, never a way in (pickle.UnpicklingError is _pickle's).
            return None
        owner = _owner_module(obj)
        if owner is None or owner == "builtins":
            return None
        partial = self._partial_name(owner)
        if partial in self.partial:
            name = _owner_name(obj)
            if name not in self.partial[partial]:
                return f"use of {partial}.{name} ({self.partial_kinds.get(partial, '')})"
            return None
        reason = self.module_refusal(owner)
        return None if reason is None else f"{_qualified_name(owner, obj)}: {reason}"

    def resolve(self, chain):
        """A refusal (str) for one chain, or None. Unresolvable chains are none of the screen's business:
        the run fails on its own."""
        root = chain["root"]
        attrs = list(chain.get("attrs", ()))
        use = chain.get("use", "load")
        reason = self.module_refusal(root)
        if reason is not None:
            return reason
        try:
            obj = self.import_module(root)
        except Exception:
            return None
        path = root
        for attr in attrs:
            reason = self._member_refusal(obj, attr, path)
            if reason is not None:
                return reason
            nxt = self._step(obj, attr)
            if nxt is _UNRESOLVED:
                return None
            path = path + "." + attr
            reason = self._reached_refusal(nxt, path)
            if reason is not None:
                return reason
            obj = nxt
        if not attrs:
            reason = self.object_refusal(obj)
            if reason is not None:
                return reason
        if use == "call" and id(obj) in self.called:
            return f"a call of {self.called[id(obj)]} (code from text)"
        return None

    def _member_refusal(self, obj, attr, path):
        """Why ``attr`` may not be taken from the module ``obj`` (``os`` and ``sys`` beyond their harmless
        attributes, torch._C beyond its list), or None; None for anything but a module."""
        if not _is_module(obj):
            return None
        name = self._partial_name(_module_name(obj))
        reached = "" if path == name else f" (reached as {path}.{attr})"
        if name in self.partial and attr not in self.partial[name]:
            return f"use of {name}.{attr}{reached} ({self.partial_kinds.get(name, '')})"
        members = self.members.get(name)
        if members is not None and attr not in members:
            return f"use of {name}.{attr}{reached} ({self.members_kind})"
        return None

    def _step(self, obj, attr):
        """``obj.attr``, else the submodule ``attr`` of the module ``obj``, else ``_UNRESOLVED``."""
        try:
            return getattr(obj, attr)
        except Exception:
            if _is_module(obj):
                try:
                    return self.import_module(_module_name(obj) + "." + attr)
                except Exception:
                    pass
            return _UNRESOLVED

    def _reached_refusal(self, obj, path):
        """Why the chain may not reach ``obj`` (a denied module, a dangerous object), naming ``path``, or
        None."""
        if _is_module(obj):
            reason = self.module_refusal(_module_name(obj))
            if reason is not None:
                return reason + f" (reached as {path})"
            return None
        reason = self.object_refusal(obj)
        if reason is not None:
            return reason + f" (reached as {path})"
        return None


def _owner_module(obj):
    """The module an object says it belongs to (a class's own ``__module__``, a function's), without running
    code of the object's class; None when it says nothing readable."""
    try:
        if _is_type(obj):
            return _text(type.__dict__["__module__"].__get__(obj)) or None
        value = object.__getattribute__(obj, "__module__")
    except Exception:
        return None
    return value if type(value) is str else None


def _owner_name(obj):
    try:
        value = object.__getattribute__(obj, "__name__")
    except Exception:
        return "?"
    return _text(value)


def _qualified_name(owner, obj):
    return owner + "." + _owner_name(obj)


def resolve_chains(screen):
    """Findings ``[{"line", "construct"}]`` for the chains of ``screen`` (see ``_Resolver``)."""
    resolver = _Resolver(screen.get("policy", {}))
    findings = []
    for chain in screen.get("chains", ()):
        try:
            reason = resolver.resolve(chain)
        except Exception as exc:
            reason = f"the chain {chain.get('root')}.{'.'.join(chain.get('attrs', ()))} cannot be checked ({type(exc).__name__})"
        if reason is not None:
            findings.append({"line": chain.get("line", 0), "construct": reason})
    return findings


# ---------------------------------------------------------------- the audit hook


#: (module, qualname prefix) of library functions that may obtain or read a frame while a completion is on
#: the stack: they read it for names and line numbers and never hand it to their caller. (The stack walkers a
#: completion could call itself to read the test's frames or lines, ``traceback.extract_stack`` and the like,
#: are refused by the screen when it names them.)
FRAME_USERS = (
    ("logging", "Logger.findCaller"),
    ("logging", "_is_internal_frame"),
    ("logging", "<lambda>"),
    ("collections", "namedtuple"),
    ("typing", "_caller"),
    ("typing", "TypeVar"),
    ("typing", "ParamSpec"),
    ("enum", ""),
    ("warnings", ""),
    ("traceback", "_walk_tb_with_full_positions"),
    ("traceback", "StackSummary"),
    ("traceback", "extract_stack"),
    ("traceback", "format_stack"),
    ("traceback", "print_stack"),
    # torch's generics (torch.compile, torch.func, checkpoint, DataLoader import them) ask whether typing's own
    # frame is subscripting Generic, and name the module a type alias is made in.
    ("typing_extensions", "_has_generic_or_protocol_as_origin"),
    ("typing_extensions", "_caller"),
    # torch.library records where a library of ops, or a fake kernel, was registered (torch.func's transforms
    # and torch.compile register theirs on first use); dynamo names the guard being built and skips its own
    # frames; fx's wrap() registers a function of the module that calls it; sympy's dispatch finds a class
    # body's earlier definition of the same name (both at import).
    ("torch.library", "Library.__init__"),
    ("torch.library", "Library._register_fake"),
    ("torch._library.utils", "get_source"),
    ("torch._dynamo.convert_frame", "ConvertFrameAssert.__call__"),
    ("torch._dynamo.guards", "GuardBuilder._set_guard_export_info"),
    ("torch.fx._symbolic_trace", "wrap"),
    ("sympy.multipledispatch.core", "dispatch"),
    ("inspect", "currentframe"),
)
#: FRAME_USERS entries that hand the frame they obtain to their caller (``logging.currentframe``,
#: ``inspect.currentframe``): allowed only when that caller is itself one of FRAME_USERS.
FRAME_GETTERS = (("logging", "<lambda>"), ("inspect", "currentframe"))
#: Standard-library functions that may execute generated code for a completion (they build it from
#: validated names). Other libraries' generated code (torch.compile's, torch.fx's) runs as it always did;
#: the helpers that run a caller's text are refused by the screen (``screen.DANGEROUS``).
EXEC_USERS = (
    ("collections", "namedtuple"),
    ("dataclasses", ""),
    ("importlib._bootstrap", ""),
    ("importlib._bootstrap_external", ""),
)
#: Standard-library functions that evaluate string annotations (``typing.get_type_hints``): allowed for a
#: type expression only (``_type_expression``).
ANNOTATION_EVALUATORS = (("typing", ""),)
#: What a type expression's code may do: load names, attributes and constants, subscript, combine with
#: operators (``Optional[int]``, ``torch.Tensor | None``, ``dict[str, "Config"]``). No call, no store.
_TYPE_EXPRESSION_OPS = frozenset(
    {
        "RESUME", "NOP", "CACHE", "EXTENDED_ARG", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_CONST",
        "BINARY_SUBSCR", "BINARY_OP", "BUILD_TUPLE", "BUILD_LIST", "RETURN_VALUE", "RETURN_CONST",
        "PUSH_NULL", "UNARY_NEGATIVE",
    }
)  # fmt: skip
#: Attributes whose reads raise ``object.__getattr__`` and hand out a frame (``f_code`` of a frame is not
#: judged: only a holder of a frame can read it, and obtaining one is judged).
_FRAME_READS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
#: Attributes whose reads raise ``object.__getattr__`` and hand out a function's or a generator's code or a
#: function's default values. Refused for the test's and the oracles' (their constants tell a variant from
#: the original); everything else's are read all the time (inspect, torch.compile).
_CODE_READS = frozenset({"__code__", "__defaults__", "__kwdefaults__", "gi_code", "cr_code", "ag_code"})
_ALLOWED_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"})
#: Events refused whoever raises them on the completion's behalf: other threads' frames and every object the
#: collector tracks (telling the runs apart), tracing and profiling hooks and a second audit hook (which would
#: see every event of the test), pickle loading, signals sent and processes started (escape).
_ALWAYS = frozenset(
    {
        "sys._current_frames", "sys._current_exceptions", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "sys.settrace", "sys.setprofile", "sys._settraceallthreads",
        "sys._setprofileallthreads", "sys.addaudithook", "setopencodehook",
        "pickle.find_class", "os.kill", "os.killpg", "signal.pthread_kill", "os.fork", "os.forkpty",
        "os.exec", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen", "sys.monitoring.register_callback",
    }
)  # fmt: skip
#: Every audit event of ctypes (raw memory, foreign calls, loading native code).
_CTYPES = frozenset(
    "ctypes." + name
    for name in (
        "addressof", "call_function", "cdata", "cdata/buffer", "create_string_buffer",
        "create_unicode_buffer", "dlopen", "dlsym", "dlsym/handle", "get_errno", "get_last_error",
        "seh_exception", "set_errno", "set_last_error", "string_at", "wstring_at", "PyObj_FromPtr",
    )
)  # fmt: skip
_ALWAYS = _ALWAYS | _CTYPES
#: Events the import system raises for the modules it loads (bytecode from __pycache__).
_IMPORT_EVENTS = frozenset({"marshal.loads", "marshal.load"})
_IMPORTERS = (("importlib._bootstrap", ""), ("importlib._bootstrap_external", ""), ("zipimport", ""))
#: The audit event every function of an oracle module raises when it is entered (``_OracleFinder``).
ORACLE_EVENT = "rcb.oracle"
_WATCHED = (
    _ALWAYS
    | _IMPORT_EVENTS
    | {
        "sys._getframe",
        "object.__getattr__",
        "object.__setattr__",
        "object.__delattr__",
        "code.__new__",
        "exec",
        "open",
        "os.rename",
        "os.link",
        "os.symlink",
        "shutil.copyfile",
        ORACLE_EVENT,
    }
)


def _generator_types():
    """type -> the getter of its running code (``gi_code``, ``cr_code``, ``ag_code``), read through the type's
    own descriptor."""
    import types

    found = {}
    for kind, attr in ((types.GeneratorType, "gi_code"), (types.CoroutineType, "cr_code")):
        found[kind] = kind.__dict__[attr].__get__
    found[types.AsyncGeneratorType] = types.AsyncGeneratorType.__dict__["ag_code"].__get__
    return found


_RUNNING_CODE = _generator_types()


def _matches(pairs, module, qualname):
    return any(module == m and qualname.startswith(q) for m, q in pairs)


def _type_expression(code):
    """Whether ``code`` (what ``eval`` is about to run) is a type expression: loads, subscripts and
    operators on names that are not dunders, nothing nested."""
    import dis

    if type(code) is not type(_type_expression.__code__):
        return False
    if any(type(c) is type(code) for c in code.co_consts):
        return False
    if any(type(n) is not str or n.startswith("__") for n in code.co_names):
        return False
    return all(ins.opname in _TYPE_EXPRESSION_OPS for ins in dis.get_instructions(code))


class _AuditHook:
    """The run's audit hook (see the module docstring and docs/integrity.md). Judges only events on behalf of
    the completion: the innermost frame on the stack whose code lives in the task folder is one of the
    completion's lines. Never calls code of the objects it is handed.

    What it refuses protects the confirmation and the sandbox only (the same kinds as the screen's): the
    oracle and the test script (opening their files, reading their functions' code and defaults),
    what could tell a confirmation run from the original (frames, the collector's object lists, tracing
    hooks), code from text (exec on the completion's lines or through the standard library), and escape
    (processes, signals, ctypes, pickle loading, descriptors, /proc and devices, files Python would import).
    Writing classes' attributes, changing an object's class and replacing library functions are forging at
    worst, which the confirmation catches."""

    def __init__(self, ctx):
        import _thread
        import dis  # noqa: F401 - _type_expression uses it; imported before any task code runs
        import importlib.machinery
        import pathlib

        self.ident = _thread.get_ident
        self.busy = set()
        self.prefix = ctx["workdir"].rstrip("/") + "/"
        completion = ctx.get("completion") or {}
        self.file = completion.get("file")
        self.first = completion.get("first", 0)
        self.last = completion.get("last", -1)
        self.completed_real = set(ctx.get("completed_real", ()))
        roots = [ctx["workdir"]] + [r for r in ctx.get("sources", ()) if r]
        oracles = ctx.get("oracles", ())
        self.oracles = {os.path.join(root, p) for root in roots for p in oracles}
        self.tests = {os.path.join(root, ctx["entry"]) for root in roots}
        self.test = os.path.join(ctx["workdir"], ctx["entry"])
        self.oracles |= {_realpath(p) for p in self.oracles}
        self.tests |= {_realpath(p) for p in self.tests}
        #: Files whose functions' code and defaults the completion may not read.
        self.protected = self.oracles | self.tests
        self.suffixes = tuple(importlib.machinery.all_suffixes()) + (".pth",)
        self.paths = (pathlib.PurePath, pathlib.PurePosixPath, pathlib.Path, pathlib.PosixPath)
        self.nonce = ctx["nonce"]
        self.ended = False
        #: id(code) -> (code, a FRAME_USERS function, a FRAME_GETTERS function), for code outside the completion
        self.kinds = {}

    # -- attribution

    def _in_completion(self, frame):
        code = frame.f_code
        if code.co_filename != self.file:
            return False
        return self.first <= frame.f_lineno <= self.last or self.first <= code.co_firstlineno <= self.last

    def _attributed(self, frame):
        """The completion's frame the event is on behalf of (the innermost task frame, when it runs one of
        the completion's lines), or None."""
        while frame is not None:
            if frame.f_code.co_filename.startswith(self.prefix):
                return frame if self._in_completion(frame) else None
            frame = frame.f_back
        return None

    @staticmethod
    def _where(frame):
        return _text(dict.get(frame.f_globals, "__name__", "")), frame.f_code.co_qualname

    def _protected_function(self, obj, name="__code__"):
        """Whether ``obj`` is a function (a generator, a coroutine: ``name`` is its code's attribute) whose
        code lives in the test script or an oracle file."""
        if _is_function(obj):
            code = obj.__code__
        elif name in ("gi_code", "cr_code", "ag_code") and type(obj) in _RUNNING_CODE:
            code = _RUNNING_CODE[type(obj)](obj)
        else:
            return False
        filename = code.co_filename
        if type(filename) is not str:
            return False
        return filename in self.protected or (
            filename.startswith(self.prefix) and _realpath(filename) in self.protected
        )

    # -- the hook

    def _frame_user(self, frame):
        """Whether ``frame`` (not the completion's) is a library function allowed to read frames."""
        code = frame.f_code
        kind = self.kinds.get(id(code))
        if kind is None or kind[0] is not code:
            if code.co_filename == self.file:
                return False
            module, qualname = self._where(frame)
            user = _matches(FRAME_USERS, module, qualname)
            kind = (code, user, user and _matches(FRAME_GETTERS, module, qualname))
            # Keyed by identity and holding the code object, so that no other code can take its id.
            self.kinds[id(code)] = kind
        if kind[2]:
            caller = frame.f_back
            return caller is not None and caller is not frame and self._frame_user(caller)
        return kind[1]

    def __call__(self, event, args):
        if event not in _WATCHED or self.file is None or self.ended:
            return
        if event == ORACLE_EVENT:
            self._judge_oracle_call()
            return
        frame_event = event == "sys._getframe"
        code_event = False
        if event == "object.__getattr__":
            # Only these attribute reads are ever judged; every traceback a library formats reads f_code
            # once per frame, so the rest return before any work.
            name = args[1] if len(args) > 1 else None
            code_event = name in _CODE_READS
            if not code_event and name not in _FRAME_READS:
                return
            frame_event = not code_event
        ident = self.ident()
        if ident in self.busy:
            return
        self.busy.add(ident)
        where = ""
        try:
            # Functions of the library and of the completion are read all the time (torch.compile, inspect):
            # decided from the function's own file before any walk up the stack.
            if code_event and not self._protected_function(args[0], args[1]):
                return
            frame = _getframe(1)
            # A frame read by a library allowed to read frames is never refused, whoever called it: decided
            # from the reading frame alone, without walking the stack.
            if frame_event and self._frame_user(frame):
                return
            owner = self._attributed(frame)
            reason = self._judge(event, args, frame) if owner is not None else None
            if owner is not None:
                where = f"{owner.f_code.co_filename[len(self.prefix) :]}:{owner.f_lineno}: "
        except Exception as exc:
            reason = f"an event the audit hook could not judge ({event}: {type(exc).__name__})"
        finally:
            self.busy.discard(ident)
        if reason is not None:
            self._end(event, where + reason)

    def _judge_oracle_call(self):
        """An oracle function was entered: refused when the task code that called it (the innermost frame of
        the task folder outside the oracles) is one of the completion's lines, however the completion reached
        it (by name, through the module table, a computed path or another library). The test calls it."""
        ident = self.ident()
        if ident in self.busy:
            return
        self.busy.add(ident)
        reason = None
        try:
            called = _getframe(2)
            caller = called.f_back
            while caller is not None:
                filename = caller.f_code.co_filename
                if filename.startswith(self.prefix) and filename not in self.oracles:
                    break
                caller = caller.f_back
            if caller is not None and self._in_completion(caller):
                module, qualname = self._where(called)
                where = f"{caller.f_code.co_filename[len(self.prefix) :]}:{caller.f_lineno}: "
                reason = f"{where}calling the oracle ({module}.{qualname})"
        except Exception as exc:
            reason = f"an event the audit hook could not judge ({ORACLE_EVENT}: {type(exc).__name__})"
        finally:
            self.busy.discard(ident)
        if reason is not None:
            self._end(ORACLE_EVENT, reason)

    def _judge(self, event, args, frame):
        direct = self._in_completion(frame)
        module, qualname = self._where(frame)
        by = "" if direct else f" by {module}.{qualname}"
        if event == "ctypes.dlopen" and self._library_loads_ctypes(frame, args):
            return None
        if event in _ALWAYS:
            return f"{event}{by}"
        if event in _IMPORT_EVENTS:
            return None if not direct and _matches(_IMPORTERS, module, qualname) else f"{event}{by}"
        if event == "sys._getframe":
            return f"frame access (sys._getframe{by})"
        if event == "object.__getattr__":
            name = args[1] if len(args) > 1 else None
            if name in _CODE_READS:
                return f"reading {name} of a function of the test or an oracle{by}"
            if name in _FRAME_READS and not self._frame_user(frame):
                return f"frame access ({name}{by})"
            return None
        if event in ("object.__setattr__", "object.__delattr__"):
            obj, name = args[0], args[1] if len(args) > 1 else None
            if _is_function(obj) and self._protected_function(obj):
                return f"writing {name} of a function of the test or an oracle{by}"
            return None
        if event == "code.__new__":
            return "code made from bytes (code.__new__)" if direct else None
        if event == "exec":
            if direct:
                return "exec of code"
            top = module.split(".", 1)[0]
            if top in getattr(sys, "stdlib_module_names", ()) and not _matches(EXEC_USERS, module, qualname):
                code = args[0] if args else None
                if _matches(ANNOTATION_EVALUATORS, module, qualname) and _type_expression(code):
                    return None
                return f"exec of code through {module}.{qualname}"
            return None
        if event == "open":
            return self._judge_open(args)
        if event in ("os.rename", "os.link", "os.symlink", "shutil.copyfile"):
            target = args[1] if len(args) > 1 else None
            if type(target) in (str, bytes) and self._importable(target):
                return f"{event} to a file Python would import ({_text(os.fsdecode(target))})"
            return None
        return None

    def _library_loads_ctypes(self, frame, args):
        """Whether the event is ctypes' own start-up (opening libpython) in an import of ctypes by a library
        (torch's profiler imports it while a DataLoader iterates): the module is dropped before every run
        (``_install_audit_hook``), so that importing it from the completion's lines is seen."""
        caller = frame.f_back
        if not args or args[0] is not None or caller is None or caller.f_code.co_name != "<module>":
            return False
        if _text(dict.get(caller.f_globals, "__name__", "")) != "ctypes":
            return False
        importer = caller.f_back
        while importer is not None and _text(dict.get(importer.f_globals, "__name__", "")).startswith(
            "importlib"
        ):
            importer = importer.f_back
        return importer is not None and not self._in_completion(importer)

    def _importable(self, path):
        text = os.fsdecode(path) if type(path) is bytes else path
        return text.endswith(self.suffixes)

    def _judge_open(self, args):
        path = args[0] if args else None
        mode = args[1] if len(args) > 1 and type(args[1]) is str else "r"
        if type(path) is int:
            return f"open() of file descriptor {path}"
        if type(path) in self.paths:
            path = self.paths[0].__fspath__(path)
        if type(path) is bytes:
            path = os.fsdecode(path)
        if type(path) is not str:
            return f"open() of an object of type {_text(type(path).__qualname__)}"
        # The working folder as it is now (a run may have changed it), not as it was.
        full = path if path.startswith("/") else os.path.join(_getcwd(), path)
        real = _realpath(full)
        if real in self.oracles or full in self.oracles:
            return f"reading the oracle {os.path.basename(real)}"
        if real in self.tests or full in self.tests:
            return "reading the test script"
        if real.startswith("/proc/") or real == "/proc":
            return f"open() of {real}"
        if real.startswith("/dev/") and not real.startswith("/dev/shm/") and real not in _ALLOWED_DEVICES:
            return f"open() of {real}"
        if any(c in mode for c in "wax+") and self._importable(real):
            return f"writing a file Python would import ({os.path.basename(real)})"
        return None

    def _end(self, event, reason):
        self.ended = True
        record = {
            "nonce": self.nonce,
            "status": 1,
            "early_exit": False,
            "exception": None,
            "breaches": [],
            "audit": {"event": event, "reason": reason[:_MESSAGE_LIMIT]},
        }
        _emit(RESULT_MARK + " " + _dumps(record))
        _exit(1)


# ---------------------------------------------------------------- one run


def _exit_status(code):
    """What CPython does with ``SystemExit(code)``: None -> 0, int -> int, anything else printed -> 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


def _flush(streams):
    for flush in streams:
        try:
            flush()
        except Exception:
            pass


def _identity(fd):
    try:
        info = _fstat(fd)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def run_test(spec, nonce):
    """Run the test of ``spec`` in the current directory (after ``prepare``); never returns."""
    _apply_limits(spec.get("limits", {}))
    if spec.get("isolation"):
        _isolate(spec["isolation"])
        slate = "fresh"
    else:
        slate = spec.get("slate", "container")
    workdir = os.getcwd()
    completed_real = {_realpath(os.path.join(workdir, path)) for path in spec.get("completed", ())}
    channel = _dup(2)
    _CHANNEL[0] = channel
    channel_identity = _identity(channel)
    flushes = [sys.stdout.flush, sys.stderr.flush]
    _emit(START_MARK + " " + nonce)
    record = {"nonce": nonce, "early_exit": False, "status": 1, "exception": None, "slate": slate}
    _install_audit_hook(spec, workdir, completed_real, nonce)
    _refuse_screened(spec.get("screen"), record)
    tally = _TALLY
    tally.completed_real = completed_real
    tally.failfast = bool(spec.get("failfast", True))
    regions_run = _trace(spec["trace"], workdir, tally) if spec.get("trace") else None
    started = time.monotonic()

    def finish(status=None):
        """End the run: its record (``status``: the run ended early, by fail-fast, with it) and the exit."""
        if status is not None:
            record["status"] = status
        record["duration_s"] = time.monotonic() - started
        if regions_run is not None:
            record["coverage"] = regions_run()
        if tally.early_exit:
            record["early_exit"] = True
        breaches = []
        if _identity(channel) != channel_identity:
            breaches.append("the result channel was replaced")
        record["breaches"] = breaches
        _record_tests(record, tally)
        _flush(flushes)
        _report_hidden(tally)
        _flush(flushes)
        _emit(RESULT_MARK + " " + _dumps(record))
        _exit(record["status"])

    tally.finish = finish
    _run_entry(workdir, spec["entry"], completed_real, record)
    finish()


def _report_hidden(tally):
    """Print the failures the harness hid from the run, now that nothing of the run runs any more."""
    for key, exc in tally.hidden[:20]:
        try:
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        except Exception:
            text = "(the failure could not be formatted)\n"
        try:
            sys.stderr.write(f"\n{'=' * 70}\nFAIL: {key}\n{'-' * 70}\n{text[-4000:]}")
        except Exception:
            pass
    if tally.hidden:
        try:
            sys.stderr.write(
                f"\nrcb: {len(tally.failing())} test(s) failed; the harness recorded each failure and kept it "
                "from unittest until the run ended\n"
            )
        except Exception:
            pass


def _install_audit_hook(spec, workdir, completed_real, nonce):
    """Install the run's audit hook (``_AuditHook``; it cannot be removed) and drop ctypes from
    ``sys.modules``; returns the hook."""
    completion = spec.get("completion")
    if completion:
        completion = dict(completion, file=os.path.join(workdir, completion["file"]))
    hook = _AuditHook(
        {
            "workdir": workdir,
            "entry": spec["entry"],
            "completion": completion,
            "completed_real": completed_real,
            "oracles": spec.get("oracles", ()),
            # The read-only view the task folder was copied from holds the same files.
            "sources": [(spec.get("isolation") or {}).get("source")],
            "nonce": nonce,
        }
    )
    sys.addaudithook(hook)
    if completion and spec.get("oracles"):
        sys.meta_path.insert(0, _OracleFinder(workdir, spec["oracles"]))
    # ctypes calls through function pointers raise no audit event; a run that wants ctypes has to import it
    # again, whose own start-up (loading libpython) does. Libraries keep the module they hold.
    for name in [n for n in sys.modules if n == "_ctypes" or n == "ctypes" or n.startswith("ctypes.")]:
        del sys.modules[name]
    return hook


class _OracleFinder:
    """Imports the task's oracle modules with every function raising ``ORACLE_EVENT`` when it is entered, so
    the audit hook sees each call of the oracle and who made it (``_AuditHook._judge_oracle_call``). Only
    text inside lines is added: every line keeps its number. Installed for runs that judge a completion,
    the original and its confirmation alike."""

    def __init__(self, workdir, oracles):
        paths = {os.path.join(workdir, p) for p in oracles if p.endswith(".py")}
        self.paths = paths | {_realpath(p) for p in paths}

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = getattr(spec, "origin", None)
        if (
            spec is None
            or type(origin) is not str
            or origin not in self.paths
            and _realpath(origin) not in self.paths
        ):
            return None
        spec.loader = _oracle_loader()(fullname, origin)
        return spec


_ORACLE_LOADER = []


def _oracle_loader():
    """The loader class of oracle modules (made once, on first use)."""
    if not _ORACLE_LOADER:
        import ast
        import importlib.machinery

        class OracleLoader(importlib.machinery.SourceFileLoader):
            def source_to_code(self, data, path, *, _optimize=-1):
                tree = ast.parse(data, filename=path)
                for node in ast.walk(tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                        first = node.body[0]
                        docstring = (
                            isinstance(first, ast.Expr)
                            and isinstance(first.value, ast.Constant)
                            and isinstance(first.value.value, str)
                        )
                        at = node.body[1] if docstring and len(node.body) > 1 else first
                        call = ast.parse(f"__import__('sys').audit({ORACLE_EVENT!r})").body[0]
                        for part in ast.walk(call):
                            ast.copy_location(part, at)
                            part.end_lineno, part.end_col_offset = at.lineno, at.col_offset
                        node.body.insert(1 if docstring else 0, call)
                return compile(tree, path, "exec", dont_inherit=True)

        _ORACLE_LOADER.append(OracleLoader)
    return _ORACLE_LOADER[0]


def _refuse_screened(screen, record):
    """End the run, before any task code runs, when the resolution step refuses one of the screen's chains
    (``resolve_chains``); the result names its findings."""
    if screen and screen.get("chains"):
        findings = resolve_chains(screen)
        if findings:
            record.update({"breaches": [], "screen": findings})
            _emit(RESULT_MARK + " " + _dumps(record))
            _exit(1)


def _run_entry(workdir, entry, completed_real, record):
    """Run the test script exactly as ``python ENTRY`` would in ``workdir`` (a fresh ``__main__``,
    ``sys.argv``, ``sys.path[0]``); its exit status, an early exit (``SystemExit`` raised from a completed
    file) or its final exception go into ``record``."""
    try:
        path = os.path.join(workdir, entry)
        import types

        main = types.ModuleType("__main__")
        main.__dict__.update({"__file__": path, "__builtins__": __builtins__, "__cached__": None})
        sys.modules["__main__"] = main
        sys.argv = [entry]
        sys.path.insert(0, os.path.dirname(path))
        with open(path, "rb") as handle:
            source = handle.read()
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, main.__dict__)
        record["status"] = 0
    except SystemExit as exc:
        if _raised_from(exc.__traceback__, completed_real):
            record["early_exit"] = True
        record["status"] = _exit_status(exc.code)
    except BaseException as exc:
        record["status"] = 1
        record["exception"] = _exception_info(exc)
        try:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
        except Exception:
            pass


def _record_tests(record, tally):
    """The unittest counts of the run (None where it did not use unittest), how each test method ended, the
    tests that ended by unittest's stop signal or a skip the completion raised (``silenced``), a failing
    status where a test failed (hidden from unittest, which called the run a success) and, when the test
    raised nothing itself, the first error or failure recorded."""
    used = tally.unittest or bool(tally.outcomes)
    record["unittest"] = used
    record["tests"] = dict(tally.outcomes) if tally.outcomes else None
    record["silenced"] = tally.silenced()
    failing = len(tally.failing())
    if failing and record["status"] == 0:
        # unittest saw these tests pass: their failures were hidden from it (``_Tally.hide``).
        record["status"] = 1
    record["tests_run"] = max(tally.run, len(tally.outcomes)) if used else None
    # unittest counted what reached it; what the harness hid never did.
    hidden = len({key for key, _exc in tally.hidden})
    record["tests_failed"] = max(tally.failed, tally.noted) + hidden if used else None
    record["tests_skipped"] = tally.skipped if used else None
    if record["exception"] is None:
        record["exception"] = tally.first_error or tally.first_failure


def _read_nonce():
    nonce = sys.stdin.readline().strip()
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    return nonce


# ---------------------------------------------------------------- the warm fork server


def _set_dumpable(value):
    """PR_SET_DUMPABLE: a non-dumpable server cannot be ptraced (and so not poisoned) by its children."""
    try:
        _ctypes, libc = _libc()
        libc.prctl(4, value, 0, 0, 0)
    except Exception:
        pass


def _other_pids():
    me = os.getpid()
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            pid = int(name)
            if pid not in (1, me):
                try:
                    with open(f"/proc/{pid}/stat", "rb") as handle:
                        state = handle.read().rsplit(b")", 1)[1].split()[0]
                except OSError:
                    continue
                if state not in (b"Z", b"X"):
                    pids.append(pid)
    return pids


#: Seconds the server waits for killed processes to vanish. A killed process holding gigabytes needs
#: about a second of CPU to free them, much longer on a loaded machine; a fixed number of short polls
#: (about one second) made a loaded server report itself unclean and get discarded.
KILL_WAIT_S = 20.0


def _kill_others():
    """Kill every process of this pid namespace except init and the server; True when none is left
    within ``KILL_WAIT_S`` seconds."""
    deadline = time.monotonic() + KILL_WAIT_S
    pause = 0.002
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        _reap()
        if not _other_pids():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _reap():
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _view():
    """What the server sees of the places a run could write: they must not change between runs."""
    found = {}
    for folder in ("/tmp", "/dev/shm", "/dev", "/task"):
        try:
            found[folder] = sorted(os.listdir(folder))
        except OSError as exc:
            found[folder] = f"unreadable: {exc}"
    return found


def _shared_writable_mappings():
    """Writable shared memory mappings of this process: a forked run could write through them into the next
    run's memory, so a server holding any cannot serve."""
    found = []
    try:
        with open("/proc/self/maps") as handle:
            for line in handle:
                perms = line.split()[1]
                if perms[1] == "w" and perms[3] == "s":
                    found.append(line.strip())
    except OSError as exc:
        found.append(f"/proc/self/maps unreadable: {exc}")
    return found


def _child(request):
    """In the forked child: become the test process described by ``request`` (never returns)."""
    try:
        # The server is not dumpable (no run may ptrace it); its child must be, or its own /proc files (the
        # user namespace maps among them) belong to root and the run's namespaces cannot be made.
        _set_dumpable(1)
        os.setsid()
        os.chdir(request["workdir"])
        for fd, name in ((1, "stdout"), (2, "stderr")):
            target = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.closerange(3, 65536)
        sys.stdin = sys.__stdin__ = open(0, closefd=False)  # noqa: SIM115 - fd 0 lives with the process
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")
        except OSError:
            pass
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        run_test(request, request["nonce"])
    except BaseException:
        try:
            traceback.print_exc()
        finally:
            os._exit(70)
    os._exit(70)


def _serve_one(request, view):
    """Fork one run, enforce its deadline, clean the namespace; return the answer for the host."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request)
    deadline = started + float(request["timeout_s"])
    timed_out = False
    status = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while status is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            _done, status = os.waitpid(pid, 0)
            break
        if pidfd is not None:
            select.select([pidfd], [], [], remaining)
        else:
            time.sleep(min(remaining, 0.005))
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
    duration = time.monotonic() - started
    if pidfd is not None:
        os.close(pidfd)
    clean = _kill_others()
    unclean = [] if clean else ["a process of the run survived"]
    now = _view()
    unclean += [f"{k} changed: {view[k]} -> {now[k]}" for k in view if now.get(k) != view[k]]
    answer = {
        "duration_s": duration,
        "timed_out": timed_out,
        "clean": not unclean,
        "unclean": unclean,
        "exit_code": None,
        "signal": None,
    }
    if os.WIFEXITED(status):
        answer["exit_code"] = os.WEXITSTATUS(status)
    elif os.WIFSIGNALED(status):
        answer["signal"] = os.WTERMSIG(status)
    return answer


def serve(preload):
    """The warm server loop (see the module docstring)."""
    loaded = prepare(preload)
    # Only a server forks: a cold run would pay the collapse (about 0.7 s with torch) for nothing.
    _collapse_memory()
    global _PROTOCOL_FD
    _set_dumpable(0)
    _PROTOCOL_FD = os.dup(1)
    out = os.fdopen(_PROTOCOL_FD, "w", buffering=1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    view = _view()
    shared = _shared_writable_mappings()
    refusal = None
    if shared:
        refusal = "the server holds writable shared memory a run could reach: " + "; ".join(shared[:3])
    elif any(view[k] for k in ("/tmp", "/dev/shm", "/task")):
        refusal = f"the server's own folders are not empty: {view}"
    out.write(
        _dumps({"ready": refusal is None, "refused": refusal, "preloaded": loaded, "pid": os.getpid()}) + "\n"
    )
    if refusal is not None:
        return
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        answer = _serve_one(request, view)
        answer["id"] = request.get("id")
        out.write(_dumps(answer) + "\n")
    _kill_others()


def main(argv):
    if argv[:1] == ["run"] and len(argv) == 2:
        nonce = _read_nonce()
        spec = json.loads(argv[1])
        prepare(spec.get("preload", ()))
        run_test(spec, nonce)
    elif argv[:1] == ["serve"] and len(argv) == 2:
        serve(json.loads(argv[1]))
    elif argv[:1] == ["resolve"] and len(argv) == 1:
        screen = json.loads(sys.stdin.read())
        prepare(screen.get("preload", ()))
        sys.stdout.write(_dumps(resolve_chains(screen)) + "\n")
        sys.stdout.flush()
        _exit(0)
    else:
        sys.stderr.write("usage: harness run SPEC_JSON | serve PRELOAD_JSON | resolve < SCREEN_JSON\n")
        os._exit(64)


if __name__ == "__main__":
    main(sys.argv[1:])
