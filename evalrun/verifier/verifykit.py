"""verifykit: how a hidden verifier runs the workspace's code without letting it decide the verdict.

A verifier that imports the agent's code into the process that prints PASS has already lost:
that code can patch `unittest`, write the verdict file, or `os._exit(0)` on import. So the process
that decides (the *trusted parent*, started as `python3 -I`, which keeps the workspace and every
PYTHON* variable off its import path) only ever talks to the agent's code through a child:

    Session(setup)      a child python with the workspace importable, kept for many calls;
                        `.call(func, *args)`, `.value(expr)`, `.exec(code)` return plain data
    run(argv)           one command (a CLI, `python3 script.py`), its exit code and output
    main()              run this file's unittest cases here, in the parent; print PASS / FAIL
                        (a failed `assertEqual(got, expected)` is told where the two first differ)

Plain data is None, bool, int, float, str, bytes and lists, tuples, sets and dicts of them
(NamedTuples arrive as tuples). Anything else is an error naming its type: evaluate something
plain (`str(x)`, `x.field`). An exception in the child is re-raised in the parent as `Raised`,
and also as the builtin exception it names (`with self.assertRaises(ValueError): s.call(...)`
works). The child's own stdout/stderr never mix with the answers (it writes them to stderr).

evalrun's native format writes this file to `_evalrun/verifykit.py` at the workspace root just
before verify.sh runs (`exec python3 -I _verifier/check.py`), replacing whatever was there. A
verifier starts:

    import os, sys
    sys.path.append(os.path.abspath("_evalrun"))   # appended: the stdlib stays first
    import verifykit as kit                        # first: it hardens this process
    helper = kit.import_hidden(os.path.join(os.path.dirname(__file__), "helper.py"))

Import the verifier's own modules by path (`import_hidden`), never by putting their folder on
sys.path, where a package the agent planted beside them would win. Read every hidden file
(`read_hidden`) and import every helper before the first call into the workspace: from then on
the workspace's code has run, as the same user, and may have rewritten anything writable. On
import this module makes its process non-dumpable (no ptrace or /proc/<pid>/mem by same-user
processes) and stops reading `__pycache__` folders an agent could have planted. Stdlib only, like
everything verify.sh may use.
"""

from __future__ import annotations

import atexit
import base64
import builtins
import contextlib
import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from dataclasses import dataclass
from typing import Any, NoReturn

__all__ = [
    "Completed",
    "Raised",
    "Result",
    "Session",
    "fail",
    "first_difference",
    "import_hidden",
    "main",
    "passed",
    "read_hidden",
    "run",
]

DEFAULT_TIMEOUT_S = 30.0
MAX_OUTPUT_BYTES = 16 * 1024 * 1024  # per stream of a child; more is cut, never buffered whole
MAX_ANSWER_BYTES = 64 * 1024 * 1024

_untrusted_code_ran = False
_LIVE: list[Session] = []  # sessions still open; closed at exit


def _harden_this_process() -> None:
    sys.dont_write_bytecode = True
    sys.pycache_prefix = os.path.join(tempfile.mkdtemp(prefix="verifykit-"), "pyc")
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError):
        pass


# as a verifier's import; imported as evalrun.verifier.verifykit it only reads
if __name__ == "verifykit":
    _harden_this_process()


def _child_env(env: dict[str, str] | None) -> dict[str, str]:
    """The verifier's environment without PYTHON* (as `-E` would), plus the author's `env`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    base["PYTHONDONTWRITEBYTECODE"] = "1"
    base.update(env or {})
    return base


def _mark_untrusted() -> None:
    global _untrusted_code_ran
    _untrusted_code_ran = True


def read_hidden(path: str, binary: bool = False) -> Any:
    """A hidden file's contents, refused once the workspace's code has run (it could have
    rewritten the file by then)."""
    if _untrusted_code_ran:
        raise RuntimeError(
            f"verifykit: read {path} before the first call into the workspace's code"
        )
    with open(path, "rb") as fh:
        data = fh.read()
    return data if binary else data.decode("utf-8")


def import_hidden(path: str) -> Any:
    """Import one of the verifier's own modules from its file, by path: never through sys.path,
    where a package or stale bytecode the agent planted beside it would win."""
    import importlib.util

    if _untrusted_code_ran:
        raise RuntimeError(f"verifykit: import {path} before the first call into the workspace")
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"verifykit: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# --- plain data across the pipe --------------------------------------------------------------
# Tagged JSON, decoded without eval: lists are JSON arrays, other containers {"tag": [...]};
# ints beyond 2**53 travel as hex, which has no digit limit.


def _decode(obj: Any, depth: int = 0) -> Any:
    if depth > 200:
        raise ValueError("nested too deeply")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [_decode(x, depth + 1) for x in obj]
    if isinstance(obj, dict) and len(obj) == 1:
        ((tag, body),) = obj.items()
        if tag == "i" and isinstance(body, str):
            return int(body, 16)
        if tag == "b" and isinstance(body, str):
            return base64.b64decode(body)
        if tag in ("t", "s", "f") and isinstance(body, list):
            items = [_decode(x, depth + 1) for x in body]
            return {"t": tuple, "s": set, "f": frozenset}[tag](items)
        if tag == "d" and isinstance(body, list):
            return {_decode(k, depth + 1): _decode(v, depth + 1) for k, v in body}
    raise ValueError(f"not plain data: {str(obj)[:80]}")


@dataclass(frozen=True)
class Result:
    """What one call into the workspace gave: a plain `value`, or the exception it raised."""

    value: Any = None
    error_type: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_type is None

    def raised(self, type_name: str) -> bool:
        return self.error_type == type_name


class Raised(Exception):
    """The workspace's code raised (or could not answer). Also an instance of the builtin
    exception it names, so `assertRaises(ValueError)` catches a child's ValueError."""

    def __init__(self, what: str, result: Result):
        super().__init__(f"{what} raised {result.error_type}: {result.error}")
        self.type_name = result.error_type
        self.message = result.error


_RAISED_TYPES: dict[str, type] = {}


def _raise(what: str, result: Result) -> NoReturn:
    name = result.error_type or "Error"
    builtin = getattr(builtins, name, None)
    if name not in _RAISED_TYPES and isinstance(builtin, type) and issubclass(builtin, Exception):
        try:
            both = type(f"Raised{name}", (Raised, builtin), {})
            both("probe", result)
            _RAISED_TYPES[name] = both
        except TypeError:  # a builtin that cannot be built from one message
            pass
    raise _RAISED_TYPES.get(name, Raised)(what, result)


# --- the child ---------------------------------------------------------------------------------
# Runs as `python3 -s -c _CHILD ROOTS REQ_FD RES_FD`: requests arrive on REQ_FD, answers leave on
# RES_FD, one JSON object per line each way; its stdin is /dev/null and its stdout goes to stderr.
_CHILD = r"""
import os, sys
del sys.path[0]
import base64, json
REQ = os.fdopen(int(sys.argv[2]), "rb")
RES = os.fdopen(int(sys.argv[3]), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
sys.path[:0] = json.loads(sys.argv[1])
ns = {"__name__": "__verifykit__"}

class NotPlainData(Exception):
    pass

def plain(v, depth=0):
    if depth > 100:
        raise ValueError("value nested too deeply")
    if v is None or type(v) in (bool, str, float):
        return v
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int):
        v = int(v)
        return v if abs(v) < 2 ** 53 else {"i": hex(v)}
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, (bytes, bytearray)):
        return {"b": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, list):
        return [plain(x, depth + 1) for x in v]
    if isinstance(v, tuple):
        return {"t": [plain(x, depth + 1) for x in v]}
    if isinstance(v, (set, frozenset)):
        return {"f" if isinstance(v, frozenset) else "s": [plain(x, depth + 1) for x in v]}
    if isinstance(v, dict):
        return {"d": [[plain(k, depth + 1), plain(x, depth + 1)] for k, x in v.items()]}
    raise NotPlainData(f"the value is a {type(v).__name__} object, not plain data")

def answer(fn):
    try:
        return {"value": plain(fn())}
    except BaseException as exc:
        return {"error_type": type(exc).__name__, "error": str(exc)[:2000]}

for line in REQ:
    req = json.loads(line)
    op = req["op"]
    if op == "exec":
        out = answer(lambda: exec(req["code"], ns))
    elif op == "eval":
        out = answer(lambda: eval(req["expr"], ns))
    else:
        args = [eval(a, {}) for a in req["args"]]
        out = answer(lambda: eval(req["func"], ns)(*args))
    RES.write(json.dumps(out) + "\n")
    RES.flush()
"""


class Session:
    """A child python running in `cwd` with the workspace (or `path`) importable.

    `setup` (code, e.g. "import intervals") runs first in the child's namespace; names it binds
    stay for later calls. Each request has `timeout_s`; a child that times out or dies is killed
    (its whole process group) and every later request says so. Close it, or use `with`.
    """

    def __init__(
        self,
        setup: str = "",
        *,
        cwd: str = ".",
        path: list[str] | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ):
        _mark_untrusted()
        self.timeout_s = timeout_s
        self._dead: str | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - open for the session's life
        req_r, self._req = os.pipe()
        self._res, res_w = os.pipe()
        roots = [os.path.abspath(p) for p in (path or [cwd])]
        self._proc = subprocess.Popen(
            [sys.executable, "-s", "-c", _CHILD, json.dumps(roots), str(req_r), str(res_w)],
            cwd=cwd,
            env=_child_env(env),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            pass_fds=(req_r, res_w),
            start_new_session=True,
        )
        _LIVE.append(self)
        os.close(req_r)
        os.close(res_w)
        self._buffer = b""
        if setup:
            self.exec(setup)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def exec(self, code: str) -> None:
        result = self._ask({"op": "exec", "code": code})
        if not result.ok:
            _raise(code.strip().splitlines()[0] if code.strip() else "setup", result)

    def evaluate(self, expr: str) -> Result:
        return self._ask({"op": "eval", "expr": expr})

    def value(self, expr: str) -> Any:
        result = self.evaluate(expr)
        if not result.ok:
            _raise(expr, result)
        return result.value

    def attempt(self, func: str, *args: Any) -> Result:
        """Call `func` (an expression in the child, e.g. "intervals.gaps") with plain `args`."""
        return self._ask({"op": "call", "func": func, "args": [repr(a) for a in args]})

    def call(self, func: str, *args: Any) -> Any:
        result = self.attempt(func, *args)
        if not result.ok:
            shown = ", ".join(repr(a) for a in args)
            _raise(f"{func}({shown[:200]})", result)
        return result.value

    def log(self) -> str:
        """The tail of what the child printed (its stdout and stderr)."""
        self._log.seek(0, io.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - 4000))
        return self._log.read().decode("utf-8", "replace")

    def close(self) -> None:
        _kill_group(self._proc)
        for fd in (self._req, self._res):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._req = self._res = -1
        self._dead = self._dead or "closed"
        if self in _LIVE:
            _LIVE.remove(self)

    def _ask(self, request: dict) -> Result:
        if self._dead:
            return Result(error_type="ChildGone", error=f"the child python is gone: {self._dead}")
        try:
            _write_all(self._req, (json.dumps(request) + "\n").encode(), self.timeout_s)
            line = self._read_line(time.monotonic() + self.timeout_s)
            answer = json.loads(line)
            if "error_type" in answer:
                return Result(error_type=str(answer["error_type"]), error=str(answer["error"]))
            return Result(value=_decode(answer["value"]))
        except TimeoutError:
            self._dead = f"timed out after {self.timeout_s:g}s"
        except (OSError, EOFError) as exc:
            tail = self.log().strip().splitlines()
            self._dead = f"it exited ({exc})" + (f": {tail[-1]}" if tail else "")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            self._dead = f"it sent an unreadable answer ({exc})"
        _kill_group(self._proc)
        return Result(error_type="ChildGone", error=f"the child python is gone: {self._dead}")

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._res], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self._res, 1 << 20)
            if not chunk:
                raise EOFError("no answer")
            self._buffer += chunk
            if len(self._buffer) > MAX_ANSWER_BYTES:
                raise ValueError("answer too large")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


def _wait(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait for `proc` to exit (True) or the timeout (False), woken by a pidfd when there is one
    (Popen.wait with a timeout polls, adding tens of milliseconds to every command)."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout_s)
    finally:
        os.close(pidfd)
    if ready:
        proc.wait()
    return bool(ready)


@atexit.register
def _close_sessions() -> None:
    for session in list(_LIVE):
        session.close()


def _write_all(fd: int, data: bytes, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while data:
        _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError
        data = data[os.write(fd, data) :]


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the child and everything it started in its session (left-behind helpers too)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


# --- one command ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Completed:
    """What `run` saw: exit code (None when it timed out) and output (text, or bytes)."""

    args: list[str]
    returncode: int | None
    stdout: Any
    stderr: Any
    timed_out: bool = False


def run(
    argv: list[str],
    *,
    input: bytes | str | None = None,
    cwd: str = ".",
    env: dict[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    text: bool = True,
) -> Completed:
    """Run `argv` (e.g. ["python3", "tool.py", "x"]) in `cwd`; it and whatever it started are
    killed when it ends or times out. Output beyond 16 MiB per stream is cut."""
    _mark_untrusted()
    data = input.encode() if isinstance(input, str) else input
    files = [tempfile.TemporaryFile() for _ in range(3)]  # noqa: SIM115 - closed below
    stdin_file, out, err = files
    try:
        stdin_file.write(data or b"")
        stdin_file.seek(0)
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=_child_env(env),
            stdin=stdin_file,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        timed_out = not _wait(proc, timeout_s)
        _kill_group(proc)
        streams = []
        for fh in (out, err):
            fh.seek(0)
            raw = fh.read(MAX_OUTPUT_BYTES)
            streams.append(raw.decode("utf-8", "replace") if text else raw)
    finally:
        for fh in files:
            fh.close()
    code = None if timed_out else proc.returncode
    return Completed(list(argv), code, streams[0], streams[1], timed_out)


# --- the verdict -------------------------------------------------------------------------------

_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Raised\w*)\b(:.*)?$")


def passed() -> NoReturn:
    print("PASS")
    sys.stdout.flush()
    sys.exit(0)


def fail(reason: str) -> NoReturn:
    """Print `FAIL: reason` (the sample's reason in reports) and exit 1."""
    print("FAIL: " + reason.replace("\n", " ")[:500])
    sys.stdout.flush()
    sys.exit(1)


def first_difference(got: Any, expected: Any) -> str | None:
    """Where `got` first differs from `expected`, in a line a person can act on: for texts the
    first line that differs (`line 15: expected 'FizzBuzz\\n', got nothing (the text ends after
    line 14)`), for lists and tuples the first item, for dicts the first key. None for other
    values, or when they do not differ."""
    if isinstance(got, str) and isinstance(expected, str):
        return _first_in(got.splitlines(keepends=True), expected.splitlines(keepends=True), "line")
    sequences = (list, tuple)
    if isinstance(got, sequences) and isinstance(expected, sequences):
        return _first_in(list(got), list(expected), "item", start=0)
    if isinstance(got, dict) and isinstance(expected, dict):
        for key in [*expected, *(k for k in got if k not in expected)]:
            if key not in got:
                return f"key {key!r}: expected {_clip(expected[key])}, got no such key"
            if key not in expected:
                return f"key {key!r}: expected no such key, got {_clip(got[key])}"
            if got[key] != expected[key]:
                return f"key {key!r}: expected {_clip(expected[key])}, got {_clip(got[key])}"
    return None


def _first_in(got: list, expected: list, unit: str, start: int = 1) -> str | None:
    for index, (mine, theirs) in enumerate(zip(got, expected, strict=False)):
        if mine != theirs:
            return f"{unit} {index + start}: {_around(mine, theirs)}"
    kind = "text" if unit == "line" else "list"
    at = min(len(got), len(expected))
    if len(got) < len(expected):
        ends = f"the {kind} ends after {unit} {at - 1 + start}" if at else f"the {kind} is empty"
        return f"{unit} {at + start}: expected {_clip(expected[at])}, got nothing ({ends})"
    if len(got) > len(expected):
        return f"{unit} {at + start}: expected nothing, got {_clip(got[at])}"
    return None


def _around(got: Any, expected: Any) -> str:
    """`expected X, got Y`; two long texts are shown around the first character that differs."""
    if isinstance(got, str) and isinstance(expected, str) and max(len(got), len(expected)) > 60:
        col = next(
            (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
            min(len(got), len(expected)),
        )
        first = max(0, col - 20)
        show = slice(first, col + 40)
        return f"from character {col + 1}, expected {_clip(expected[show])}, got {_clip(got[show])}"
    return f"expected {_clip(expected)}, got {_clip(got)}"


def _clip(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 100 else shown[:97] + "..."


def _compared(tb: Any) -> str | None:
    """The first difference of the failed `assertEqual(got, expected)` in traceback `tb` (its
    frame still holds both values), with the assertion's own message; None for other failures."""
    found = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "assertEqual" and {"first", "second"} <= frame.f_locals.keys():
            found = frame.f_locals
        tb = tb.tb_next
    if found is None:
        return None
    difference = first_difference(found["first"], found["second"])
    if difference is None:
        return None
    return difference + (f" : {found['msg']}" if found.get("msg") else "")


class _Result(unittest.TextTestResult):
    """Keeps, per failed test, where the values of its failed assertEqual first differ."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.differences: dict[str, str] = {}

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        difference = _compared(err[2])
        if difference is not None:
            self.differences[test.id()] = difference
        super().addFailure(test, err)


def _describe(test: unittest.TestCase, tb: str, difference: str | None = None) -> str:
    lines = tb.rstrip().splitlines()
    found = [line for line in lines if _EXC_LINE.match(line)]
    detail = difference or (found[-1] if found else lines[-1]).strip()
    detail = re.sub(r"^(AssertionError|[\w.]*Raised\w*): ", "", detail)
    if len(detail) > 240:
        detail = detail[:237] + "..."
    what = test.shortDescription() or test.id().split(".")[-1]
    return f"{what}: {detail}"


def main() -> NoReturn:
    """Run the unittest cases of `__main__` in this process and print the verdict. A failed
    `assertEqual(got, expected)` (got first) is told by where the two first differ."""
    module = sys.modules["__main__"]
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    runner = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0, resultclass=_Result)
    result = runner.run(suite)
    assert isinstance(result, _Result)
    problems = result.failures + result.errors
    if problems:
        test, tb = problems[0]
        difference = result.differences.get(test.id())
        counted = f"({len(problems)} of {result.testsRun} checks failed)"
        fail(f"{_describe(test, tb, difference)} {counted}")
    if result.testsRun == 0:
        fail("no checks ran")
    passed()
