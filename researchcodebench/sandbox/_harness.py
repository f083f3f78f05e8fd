"""The code that runs INSIDE the sandbox, under the evaluation interpreter (Python 3.11+, stdlib only).

It is never imported by the host: the runner passes this file's source to ``python -I -B -c`` (so it works
in any backend, a container included, without mounting anything) with one of two commands:

``run ENTRY COMPLETED_JSON LIMITS_JSON [WATCH_JSON]``
    Reads a per-run nonce from stdin, then executes ``ENTRY`` (normally ``paper2code_test.py``) exactly as
    ``python ENTRY`` would in the current directory (``__main__``, ``sys.argv``, ``sys.path[0]``), and ends
    the process itself with the script's exit status.
``serve PRELOAD_JSON``
    The warm fork server: imports the heavy libraries once, then reads one JSON request per line on stdin
    and answers one JSON line per request on stdout. Each ``run`` request forks a child that does exactly
    what ``run`` does; after the child the server kills every other process of its pid namespace and wipes
    ``/tmp`` and ``/dev/shm``, so nothing of one run survives into the next.

Structured outcome: before the test starts, ``START_MARK nonce`` goes to fd 2; after the script returned
normally, or ended through a ``SystemExit`` that was not raised from a completed (model-written) file, one
``RESULT_MARK {json}`` line holding the nonce goes to fd 2 and the process ends with ``os._exit``. A
missing result line therefore means the run ended early (``os._exit`` in the completion, a signal, ...).
The nonce is only in this process's memory; this is a guard against accidental or naive early exits, not
against code that searches the interpreter's memory for it (the static screen, researchcodebench/screen.py,
refuses such code before it runs).

Runtime integrity (docs/integrity.md): before the test starts the harness hooks unittest's result methods,
imports the comparison libraries the task uses (``WATCH_JSON``) and records the identity of every function
and class of the test machinery (unittest), of those libraries (``torch.allclose``, ``numpy.testing``...,
``torch.Tensor``'s methods) and of the builtins. After the run it compares them again: anything replaced
is listed in the result's ``tampered`` field, which fails the run whatever the exit status. The result line
goes to a duplicate of fd 2 taken before the test (closing or redirecting fd 2 cannot swallow it), written
with ``os.write``/``json.dumps`` captured when the harness loaded. Tests run, failed and skipped are counted
by hooks installed before any test code ran; the runner compares them with the reference run's.

Fail-fast: every ``TextTestRunner.run`` (``unittest.main`` included) stops at its first failing test. The
run fails whatever the later tests would do, so the outcome is exact; its category is the first failing
test's (a later timeout, crash or tampering of that run is no longer seen, and the run fails anyway).
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

START_MARK = "@@RCB-START@@"
RESULT_MARK = "@@RCB-RESULT@@"
_MESSAGE_LIMIT = 2000
#: The warm server's answer channel; closed in every child so that a run cannot forge answers.
_PROTOCOL_FD = None


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


class _Tally:
    """Totals over every unittest run of the script, and the first error/failure seen."""

    def __init__(self, completed_real):
        self.completed_real = completed_real
        self.early_exit = False
        self.unittest = False
        self.run = 0
        self.failed = 0
        self.skipped = 0
        #: Errors and failures seen by the hooks themselves (not the result object's lists).
        self.noted = 0
        self.first_error = None
        self.first_failure = None

    def note(self, exc_info, failure):
        if exc_info is None or exc_info[1] is None:
            return
        self.noted += 1
        if isinstance(exc_info[1], SystemExit) and _raised_from(exc_info[2], self.completed_real):
            # unittest turns SystemExit into a test error; from model code it is still an early exit.
            self.early_exit = True
        if failure:
            if self.first_failure is None:
                self.first_failure = _exception_info(exc_info[1])
        elif self.first_error is None:
            self.first_error = _exception_info(exc_info[1])


def _hook_unittest(tally):
    """Count tests and remember the first error/failure of every ``TextTestRunner.run``."""
    import unittest

    original_run = unittest.TextTestRunner.run
    original_error = unittest.TestResult.addError
    original_failure = unittest.TestResult.addFailure
    original_subtest = unittest.TestResult.addSubTest

    def run(self, test):
        # Fail-fast: once a test has failed the run's verdict is "failed" whatever the later tests do, so
        # they are not run (docs/sandbox.md). A passing run still runs every test, and the runner still
        # compares its count with the reference run's. The caller's own setting is restored afterwards.
        chosen = getattr(self, "failfast", False)
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

    def add_error(self, test, err):
        tally.note(err, failure=False)
        return original_error(self, test, err)

    def add_failure(self, test, err):
        tally.note(err, failure=True)
        return original_failure(self, test, err)

    def add_subtest(self, test, subtest, err):
        if err is not None:
            tally.note(err, failure=issubclass(err[0], test.failureException))
        return original_subtest(self, test, subtest, err)

    unittest.TextTestRunner.run = run
    unittest.TestResult.addError = add_error
    unittest.TestResult.addFailure = add_failure
    unittest.TestResult.addSubTest = add_subtest


_UNITTEST_CLASSES = (
    "BaseTestSuite",
    "FunctionTestCase",
    "TestCase",
    "TestLoader",
    "TestProgram",
    "TestResult",
    "TestSuite",
    "TextTestResult",
    "TextTestRunner",
)
_UNITTEST_MODULES = ("case", "loader", "main", "result", "runner", "suite", "util")
#: Per watched library: submodules and classes whose functions a test compares with.
_LIBRARY_PARTS = {
    "torch": (("testing", "nn", "nn.functional", "linalg", "special", "fft"), ("Tensor", "nn.Module")),
    "numpy": (("testing", "linalg", "random"), ("ndarray",)),
}


def _resolve(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _namespaces(watch):
    """(label, namespace) pairs to guard: unittest, builtins, and the watched libraries (imported here)."""
    import builtins
    import unittest

    pairs = [("builtins", builtins.__dict__), ("unittest", unittest.__dict__)]
    for name in _UNITTEST_MODULES:
        module = sys.modules.get("unittest." + name)
        if module is not None:
            pairs.append(("unittest." + name, module.__dict__))
    for name in _UNITTEST_CLASSES:
        cls = getattr(unittest, name, None)
        if isinstance(cls, type):
            pairs.append(("unittest." + name, cls.__dict__))
    for name in watch:
        try:
            library = __import__(name)
        except Exception:
            # A missing library is the test's own ModuleNotFoundError to report.
            continue
        pairs.append((name, library.__dict__))
        modules, classes = _LIBRARY_PARTS.get(name, ((), ()))
        for dotted in modules + classes:
            obj = _resolve(library, dotted)
            if obj is not None and hasattr(obj, "__dict__"):
                pairs.append((name + "." + dotted, obj.__dict__))
    return pairs


def _guarded(value):
    return callable(value) or isinstance(value, type) or type(value).__name__ == "module"


def snapshot(watch):
    """The identities to verify after the run: (label, live namespace, copy of its guarded entries)."""
    return [
        (label, namespace, {k: v for k, v in list(namespace.items()) if _guarded(v)})
        for label, namespace in _namespaces(watch)
    ]


def replaced(saved):
    """Labels of every guarded entry that is gone or no longer the very same object."""
    missing = object()
    changed = []
    for label, namespace, entries in saved:
        for key, value in entries.items():
            if namespace.get(key, missing) is not value:
                changed.append(f"{label}.{key}")
    return changed


def _raised_from(tb, files):
    """True if any frame of the traceback runs code of one of ``files`` (absolute real paths)."""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename and os.path.realpath(filename) in files:
            return True
        tb = tb.tb_next
    return False


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


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _emit(line, fd=2):
    data = ("\n" + line + "\n").encode("utf-8", "replace")
    try:
        _write(fd, data)
    except OSError:
        pass


def _identity(fd):
    try:
        info = _fstat(fd)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def run_test(entry, completed, limits, nonce, watch=()):
    """Run ``entry`` like ``python entry`` in the current directory; never returns (ends the process)."""
    _apply_limits(limits)
    workdir = os.getcwd()
    completed_real = {os.path.realpath(os.path.join(workdir, path)) for path in completed}
    channel = _dup(2)
    channel_identity = _identity(channel)
    _emit(START_MARK + " " + nonce, channel)
    tally = _Tally(completed_real)
    record = {"nonce": nonce, "early_exit": False, "status": 1, "exception": None}
    _hook_unittest(tally)
    saved = snapshot(watch)
    started = time.monotonic()
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
        else:
            record["status"] = _exit_status(exc.code)
    except BaseException as exc:
        record["status"] = 1
        record["exception"] = _exception_info(exc)
        try:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
        except Exception:
            pass
    record["duration_s"] = time.monotonic() - started
    if tally.early_exit:
        record["early_exit"] = True
    tampered = replaced(saved)
    if _identity(channel) != channel_identity:
        tampered.append("the result channel")
    record["tampered"] = tampered
    record["unittest"] = tally.unittest
    record["tests_run"] = tally.run if tally.unittest else None
    record["tests_failed"] = max(tally.failed, tally.noted) if tally.unittest else None
    record["tests_skipped"] = tally.skipped if tally.unittest else None
    if record["exception"] is None:
        record["exception"] = tally.first_error or tally.first_failure
    _flush()
    _emit(RESULT_MARK + " " + _dumps(record), channel)
    _exit(record["status"])


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
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
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


def _wipe(folder):
    try:
        names = os.listdir(folder)
    except OSError:
        return
    import shutil

    for name in names:
        path = os.path.join(folder, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def _copy_task(source, workdir):
    """Copy the read-only task view into the run's private, size-limited task folder (the local sandbox's
    tmpfs); a folder that does not fit ends the child with a message naming the task folder."""
    import shutil

    try:
        shutil.copytree(source, workdir, symlinks=True, dirs_exist_ok=True)
    except (OSError, shutil.Error) as exc:
        sys.stderr.write(f"rcb-task: cannot copy the task folder into {workdir}: {exc}\n")
        os._exit(70)


def _child(request):
    """In the forked child: become the test process described by ``request`` (never returns)."""
    try:
        os.setsid()
        os.chdir(request["workdir"])
        for fd, name in ((1, "stdout"), (2, "stderr")):
            target = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        if request.get("source"):
            _copy_task(request["source"], request["workdir"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        if _PROTOCOL_FD is not None:
            os.close(_PROTOCOL_FD)
        sys.stdin = sys.__stdin__ = open(0, closefd=False)  # noqa: SIM115 - fd 0 lives with the process
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")
        except OSError:
            pass
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        run_test(
            request["entry"],
            request["completed"],
            request["limits"],
            request["nonce"],
            request.get("watch", ()),
        )
    except BaseException:
        try:
            traceback.print_exc()
        finally:
            os._exit(70)
    os._exit(70)


def _serve_one(request):
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
    if request.get("source"):
        _wipe(request["workdir"])
    _wipe("/tmp")
    _wipe("/dev/shm")
    answer = {
        "duration_s": duration,
        "timed_out": timed_out,
        "clean": clean,
        "exit_code": None,
        "signal": None,
    }
    if os.WIFEXITED(status):
        answer["exit_code"] = os.WEXITSTATUS(status)
    elif os.WIFSIGNALED(status):
        answer["signal"] = os.WTERMSIG(status)
    return answer


def _warm_up():
    """Exercise lazily imported paths once in the server (e.g. torch.testing pulls in sympy on first use,
    about 0.6 s), so that forked children start with them loaded. Only speed depends on this."""
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


def serve(preload):
    """The warm server loop (see the module docstring)."""
    loaded = []
    for name in preload:
        try:
            __import__(name)
            loaded.append(name)
        except Exception:
            pass
    _warm_up()
    import unittest  # noqa: F401 - every child hooks it; importing once here keeps forks cheap

    global _PROTOCOL_FD
    _set_dumpable(0)
    _PROTOCOL_FD = os.dup(1)
    out = os.fdopen(_PROTOCOL_FD, "w", buffering=1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    out.write(json.dumps({"ready": True, "preloaded": loaded, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        answer = _serve_one(request)
        answer["id"] = request.get("id")
        out.write(json.dumps(answer) + "\n")
    _kill_others()


def main(argv):
    if argv[:1] == ["run"] and len(argv) in (4, 5):
        nonce = _read_nonce()
        watch = json.loads(argv[4]) if len(argv) == 5 else ()
        run_test(argv[1], json.loads(argv[2]), json.loads(argv[3]), nonce, watch)
    elif argv[:1] == ["serve"] and len(argv) == 2:
        serve(json.loads(argv[1]))
    else:
        sys.stderr.write(
            "usage: harness run ENTRY COMPLETED_JSON LIMITS_JSON [WATCH_JSON] | serve PRELOAD_JSON\n"
        )
        os._exit(64)


if __name__ == "__main__":
    main(sys.argv[1:])
