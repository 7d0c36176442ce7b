"""Static faults in a task's own scripts, found when the task loads rather than in every sample.

A verify.sh with a bash syntax error, or a verifier helper in Python that does not compile,
fails every sample of every agent with a reason that reads like the agent's (`fail ... syntax
error`): the run completes, exits 0, and the task silently scores 0 for everyone. So a format's
`load` asks this module for the faults of the files only the task's author wrote, and refuses the
task with all of them at once (`refuse`: a `TaskFormatError`, which the suite skips as `cannot
load`), each as `<path>:<line>[:<column>]: <what>`, the way compilers and editors say where.

- Shell scripts: `bash -n`, bash's own parser, so what it refuses fails in every run. One
  `bash -n` is a process (2-5 ms) and a suite has ~80 scripts, so `screen` first parses all of
  them in a single bash (each in a forked subshell that turns on `set -n` before reading it: read,
  never run), and only a script that fails there is parsed again by a real `bash -n`, whose
  message is the one reported. A script that mentions extglob is parsed with it on, as bash has
  it on by the time it reaches the pattern. A bash older than 4 (macOS's 3.2) refuses nothing:
  the sandbox's bash is newer and accepts more.
- Python files: `compile(source, path, "exec")` - never executed, no .pyc written.
- Both cost tens of ms for the bundled suite at every start-up, so the content hashes of files
  that passed are kept per checker (this Python's version, this bash binary) in
  `$XDG_CACHE_HOME/evalrun/` (else `~/.cache/evalrun/`), and only new or changed files are
  checked again (`Passed`). Only passes are kept: a fault is found every time.
- References (`missing_runs`): verify.sh lines such as `python3 -I _verifier/check.py` whose path
  starts in one of the verifier's own folders but names nothing there. A heuristic, kept
  conservative: a path that could be the agent's (its first part not the verifier's, or also
  the workspace's), a path built from variables or globs, one the script mentions twice (it may
  create or test it) and anything after a `cd` are never flagged.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from evalrun.errors import TaskFormatError

SCREEN_TIMEOUT_S = 60
MIN_BASH = 4  # older bashes (macOS's 3.2) refuse syntax the sandboxes' bash accepts
CACHE_MAX_BYTES = 4 << 20  # a cache file past this starts over
# bash reads these at start-up or takes options from them; a check must not depend on them
SHELL_ENV = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS")

_SCREEN = r"""
printf '%s\n' "${BASH_VERSINFO[0]}"
i=0
while (($#)); do
  (
    [[ $1 == 1 ]] && shopt -s extglob
    eval "set -n
$(<"$2")"
  ) 2>/dev/null || printf '%s\n' "$i"
  i=$((i + 1))
  shift 2
done
"""


@dataclass(frozen=True)
class Fault:
    """One static fault: where (file, line, column when known) and what."""

    path: Path
    line: int | None
    what: str
    column: int | None = None

    def __str__(self) -> str:
        where = "".join(f":{n}" for n in (self.line, self.column) if n is not None)
        return f"{self.path}{where}: {self.what}"


def refuse(faults: Sequence[Fault]) -> None:
    """Raise one `TaskFormatError` listing every fault, by file and line (the first as the
    error's place, the rest on their own lines below it); nothing when there are none."""
    if not faults:
        return
    first, *rest = sorted(faults, key=lambda f: (str(f.path), f.line or 0))
    message = first.what + "".join(f"\n    {fault}" for fault in rest)
    raise TaskFormatError(first.path, message, line=first.line, column=first.column)


# --- what passed before: a cache of content hashes, per checker ------------------------------


@dataclass(frozen=True)
class Passed:
    """Content hashes of files one checker (this Python's compile, this bash's parser) passed,
    kept in a cache file across runs and read once per process. Only passes are kept: a file
    with a fault is checked again every time, so its fault is always reported."""

    path: Path
    hashes: set[str]

    def add(self, digests: Collection[str]) -> None:
        """Append in one write (concurrent runs interleave whole lines); a cache that cannot be
        written only costs the check again next time."""
        fresh = [d for d in digests if d not in self.hashes]
        self.hashes.update(fresh)
        if not fresh:
            return
        try:
            if self.path.is_file() and self.path.stat().st_size > CACHE_MAX_BYTES:
                self.path.unlink()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="ascii") as handle:
                handle.write("".join(f"{d}\n" for d in fresh))
        except OSError:
            pass


_passed: dict[Path, Passed] = {}


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "evalrun"


def passed(checker: str) -> Passed:
    """The cache of `checker` (a file name: what checks, and which version of it)."""
    path = cache_dir() / checker
    if path not in _passed:
        try:
            text = "" if path.stat().st_size > CACHE_MAX_BYTES else path.read_text("ascii")
        except (OSError, UnicodeDecodeError):
            text = ""
        _passed[path] = Passed(path, {line for line in text.split() if len(line) == 64})
    return _passed[path]


# --- shell scripts: bash -n -----------------------------------------------------------------------


class Bash(NamedTuple):
    path: str
    cache: str  # the name of its `Passed` file


@functools.cache
def _bash() -> Bash | None:
    """The bash to ask, with its cache's name (which binary: path, size and time, so an upgrade
    is judged afresh); None when there is none."""
    found = shutil.which("bash")
    if found is None:
        return None
    try:
        real = os.path.realpath(found)
        stat = os.stat(real)
    except OSError:
        return None
    ident = hashlib.sha256(f"{real}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()
    return Bash(found, f"parsed-bash-{ident[:16]}.txt")


def screen(scripts: Sequence[Path]) -> None:
    """Parse the `scripts` not known to parse in one bash process and remember which do, so
    `bash_faults` runs a `bash -n` only for the others. Call it with a whole suite's scripts
    before loading it. A bash older than 4 passes everything (it cannot judge the sandbox's)."""
    bash = _bash()
    if bash is not None:
        known = passed(bash.cache)
        _screen(bash, known, _unknown(scripts, known))


def bash_faults(scripts: Sequence[Path]) -> list[Fault]:
    """What `bash -n` says of each script (screened first, see `screen`), in the given order;
    nothing when there is no bash here."""
    bash = _bash()
    if bash is None:
        return []
    known = passed(bash.cache)
    todo = _unknown(scripts, known)
    _screen(bash, known, todo)
    return [
        fault
        for path, (digest, extglob) in todo.items()
        if digest not in known.hashes
        for fault in _bash_n(bash.path, path, extglob)
    ]


def _new(files: Sequence[Path], known: Passed) -> Iterator[tuple[Path, str, bytes]]:
    """Each readable file not known to pass: its path, content hash and bytes."""
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest not in known.hashes:
            yield path, digest, data


def _unknown(scripts: Sequence[Path], known: Passed) -> dict[Path, tuple[str, bool]]:
    """Each script not known to pass: its content hash, and whether it mentions extglob."""
    return {path: (digest, b"extglob" in data) for path, digest, data in _new(scripts, known)}


def _screen(bash: Bash, known: Passed, todo: Mapping[Path, tuple[str, bool]]) -> None:
    unique = {digest: (path, extglob) for path, (digest, extglob) in todo.items()}
    verdicts = _parse_all(bash.path, list(unique.values())) if unique else None
    if verdicts is not None:
        known.add([d for d, ok in zip(unique, verdicts, strict=True) if ok])


def _parse_all(bash: str, scripts: list[tuple[Path, bool]]) -> list[bool] | None:
    """Whether each (script, extglob) parses, from one bash; None when it did not answer."""
    args = [
        a for path, extglob in scripts for a in ("1" if extglob else "0", os.path.abspath(path))
    ]
    done = _run_bash([bash, "-c", _SCREEN, "screen", *args])
    if done is None:
        return None
    lines = done.stdout.split()
    if not lines or not lines[0].isdigit():
        return None
    if int(lines[0]) < MIN_BASH:
        return [True] * len(scripts)
    failed = {int(n) for n in lines[1:] if n.isdigit()}
    return [i not in failed for i in range(len(scripts))]


def _bash_n(bash: str, path: Path, extglob: bool) -> list[Fault]:
    """The first error `bash -n` reports for `path` (its message, with its line)."""
    options = ["-O", "extglob"] if extglob else []
    done = _run_bash([bash, *options, "-n", "--", os.path.abspath(path)])
    if done is None or done.returncode == 0:
        return []
    prefix = f"{os.path.abspath(path)}: line "
    for raw in done.stderr.splitlines():
        if not raw.startswith(prefix):
            continue
        number, _, message = raw[len(prefix) :].partition(": ")
        if number.isdigit() and not message.startswith(("warning:", "`")):
            return [Fault(path, int(number), _plain_quotes(message))]
    detail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
    return [Fault(path, None, f"bash -n refuses it: {detail[0]}")]


def _plain_quotes(message: str) -> str:
    """bash quotes a token as `fi'; say 'fi'."""
    return re.sub(r"`([^`']+)'", r"'\1'", message)


def _run_bash(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    """Run bash in an empty folder of its own (also its HOME), with no stdin; None when it could
    not run or took too long. It is only ever asked to parse (`set -n`, `-n`), but were a script
    ever run, it would find none of the caller's files around it."""
    with tempfile.TemporaryDirectory(prefix="evalrun-parse-") as empty:
        env = {k: v for k, v in os.environ.items() if k not in SHELL_ENV}
        env |= {"HOME": empty, "LC_ALL": "C"}  # LC_ALL: messages in the words `_bash_n` reads
        try:
            return subprocess.run(
                argv,
                cwd=empty,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=SCREEN_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None


# --- Python files: compile --------------------------------------------------------------------


def python_faults(files: Sequence[Path]) -> list[Fault]:
    """Each file that does not compile for this Python, with the compiler's line and column."""
    known = passed("compiled-py{}.{}.txt".format(*sys.version_info[:2]))
    checked = [(digest, _compile(path, data)) for path, digest, data in _new(files, known)]
    known.add([digest for digest, fault in checked if fault is None])
    return [fault for _, fault in checked if fault is not None]


def _compile(path: Path, data: bytes) -> Fault | None:
    with warnings.catch_warnings():  # SyntaxWarnings are the author's business, not a fault
        warnings.simplefilter("ignore")
        try:
            compile(data, str(path), "exec", dont_inherit=True)
        except SyntaxError as exc:
            return Fault(path, exc.lineno, exc.msg, exc.offset)
        except ValueError as exc:  # null bytes, on Pythons before 3.12
            return Fault(path, None, str(exc))
    return None


# --- references from verify.sh to the verifier's own files ------------------------------------

RUNNERS = {"python3": "python", "python": "python", "bash": "shell", "sh": "shell"}
RUNNERS |= {"source": "source", ".": "source"}
PREFIXES = frozenset({"exec", "command", "time", "nohup", "!", "{", "if", "then", "else", "elif"})
PREFIXES |= frozenset({"do", "while", "until"})
SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "&", "(", ")", ";;", ";&", ";;&"})
CHANGES_DIR = frozenset({"cd", "pushd", "popd"})
NOT_A_SCRIPT = {"python": "cm", "shell": "cs"}  # short options after which no script file follows
TAKES_VALUE = {"python": "WX", "shell": "oO"}
UNSURE = re.compile(r"[$`*?\[\]{}~\\]")  # a path built at run time, or a glob
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
HEREDOC = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z0-9_]+)\2")
MAX_CONTINUED_LINES = 200


def missing_runs(
    script: Path, own: Path, workspace_names: Collection[str], label: str
) -> list[Fault]:
    """Paths `script` runs (`python3 X`, `bash X`, `sh X`, `source X`, `. X`) that start in a
    folder or file of `own` (the verifier's folder, `label` in messages) but that `own` lacks.

    Never flagged: a first part not in `own` or among `workspace_names` (the agent's files may be
    there), a path with variables, globs or `..`, one `script` mentions more than once or whose
    file name another file of `own` mentions (it may be made at run time), and what follows a `cd`.
    """
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
        names = {p.name for p in own.iterdir()} - set(workspace_names)
    except OSError:
        return []
    faults = []
    for line, path in _run_targets(text):
        norm = posixpath.normpath(path)
        first = norm.split("/")[0]
        if first not in names or (own / norm).exists() or text.count(path) > 1:
            continue
        if _mentioned_elsewhere(own, script, posixpath.basename(norm)):
            continue
        faults.append(Fault(script, line, f"runs {path}, which {label} does not have"))
    return faults


def _mentioned_elsewhere(own: Path, script: Path, name: str) -> bool:
    for path in own.rglob("*"):
        if path.is_file() and path != script:
            try:
                if name in path.read_text(encoding="utf-8", errors="replace"):
                    return True
            except OSError:
                continue
    return False


def _run_targets(text: str) -> Iterator[tuple[int, str]]:
    """(line, path) for each relative path the script hands to a runner, up to its first `cd`."""
    for line, tokens in _commands(text):
        at_command = True
        for index, token in enumerate(tokens):
            if token in SEPARATORS:
                at_command = True
                continue
            if not at_command or token in PREFIXES or ASSIGNMENT.match(token):
                continue
            at_command = False
            if token in CHANGES_DIR:
                return
            kind = RUNNERS.get(token)
            path = _script_argument(kind, tokens[index + 1 :]) if kind else None
            if path and _literal_relative(path):
                yield line, path


def _literal_relative(path: str) -> bool:
    """A path written out in full, below the working directory."""
    if UNSURE.search(path) or path.startswith(("/", "-")):
        return False
    return not posixpath.normpath(path).startswith("..")


def _script_argument(kind: str, args: Sequence[str]) -> str | None:
    """The script a runner is given, or None when it runs code from `-c`, `-m` or stdin."""
    rest = iter(args)
    for arg in rest:
        if arg in SEPARATORS or set(arg) <= set("<>&|;()"):
            return None
        if kind == "source":
            return next(rest, None) if arg == "--" else arg
        if arg == "--":
            return next(rest, None)
        if arg.startswith("--"):
            if kind == "python":
                return None  # python's long options may take a value
            if arg in ("--rcfile", "--init-file"):
                next(rest, None)
            continue
        if arg[0] in "-+" and len(arg) > 1:
            if set(arg[1:]) & set(NOT_A_SCRIPT[kind]):
                return None
            if arg[-1] in TAKES_VALUE[kind]:
                next(rest, None)
            continue
        return None if arg == "-" else arg
    return None


def _commands(text: str) -> Iterator[tuple[int, list[str]]]:
    """(first line, tokens) of each logical line: continuations and multi-line quotes joined,
    comments dropped, here-document bodies skipped."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, chunk = i, lines[i]
        i += 1
        tokens: list[str] = []
        while True:
            if chunk.endswith("\\") and i < len(lines):
                chunk, i = chunk[:-1] + " " + lines[i], i + 1
                continue
            try:
                tokens = _split(chunk)
            except ValueError:  # a quote open across lines
                if i < len(lines) and i - start < MAX_CONTINUED_LINES:
                    chunk, i = chunk + "\n" + lines[i], i + 1
                    continue
            break
        for strip_tabs, _, delimiter in HEREDOC.findall(chunk):
            while i < len(lines):
                body = lines[i].lstrip("\t") if strip_tabs else lines[i]
                i += 1
                if body == delimiter:
                    break
        yield start + 1, tokens


def _split(chunk: str) -> list[str]:
    lexer = shlex.shlex(chunk, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)
