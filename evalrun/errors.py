"""The two error families of evalrun.

A `UsageError` is the user's mistake (a bad config, a bad task folder, a missing key): it stops
the run before anything starts, exits 2, and says which file, field or key is wrong and what was
expected. Everything that goes wrong *inside* one sample is recorded on that sample instead, and
the run goes on (see `evalrun.models.records`).
"""

from __future__ import annotations

from enum import IntEnum, unique
from pathlib import Path


@unique
class ExitCode(IntEnum):
    """Every status evalrun exits with, each defined here once; `MEANING` says what each means
    (`evalrun --help` lists them from it)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    TOO_MANY_ERRORS = 3
    UNLOADABLE = 4
    PARTIAL = 5
    BUDGET = 6
    SERVICE_DOWN = 7
    HUNG_UP = 129
    INTERRUPTED = 130
    TERMINATED = 143


MEANING = {
    ExitCode.OK: "done; the gate (if any) held",
    ExitCode.FAILED: "the gate broke (a run, gate, online); check: a verifier is not honest",
    ExitCode.USAGE: "a usage error (config, task folder, key, argument): nothing ran",
    ExitCode.TOO_MANY_ERRORS: "more samples ended in a harness error than max_errors allows",
    ExitCode.UNLOADABLE: "the run finished, but task folders of the suite could not be loaded",
    ExitCode.PARTIAL: "gate: the run is partial (--allow-partial gates its recorded cells)",
    ExitCode.BUDGET: "the run reached budget.run_usd before every sample ran",
    ExitCode.SERVICE_DOWN: "Opik stopped answering (online, push); what was done is kept",
    ExitCode.HUNG_UP: "SIGHUP: the terminal went away; the run is partial (resume it)",
    ExitCode.INTERRUPTED: "Ctrl-C; the run is partial (resume it)",
    ExitCode.TERMINATED: "SIGTERM (timeout, docker stop, a cancelled CI job); partial",
}


class UsageError(Exception):
    """A mistake the user can fix; printed without a traceback, exit code 2.

    The message is one line saying what is wrong; `hint`, when given, is one more line saying
    what to do about it (printed as `hint: ...`).
    """

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def bad_value(key: str, expected: str, got: object) -> UsageError:
    """The one shape of a bad config value, whichever part of evalrun checks it:
    `<dotted key>: expected <what>, got <the value>` (raise it)."""
    return UsageError(f"{key}: expected {expected}, got {got!r}")


class TaskFormatError(UsageError):
    """A task folder breaks the task-folder contract. `line` and `column`, when known, say where
    in `path`, written `path:line:column:` as compilers and editors read it."""

    def __init__(
        self,
        path: Path | str,
        message: str,
        field: str | None = None,
        *,
        line: int | None = None,
        column: int | None = None,
    ):
        self.path = Path(path)
        self.field = field
        self.line = line
        self.column = column if line is not None else None
        self.reason = message
        at = "".join(f":{n}" for n in (self.line, self.column) if n is not None)
        where = f"{self.path}{at}" + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


class SandboxError(Exception):
    """The sandbox could not start, copy or exec. Recorded on the sample as an `error`."""


class SandboxUnavailable(UsageError):
    """A sandbox backend cannot run here (engine missing, daemon unreachable, ...)."""


class HarnessError(Exception):
    """Something the agent cannot cause stopped its sample: the agent CLI missing from the
    sandbox, the model gateway failing, the provider rate-limiting or refusing the key past the
    agent's retries. Raised by an agent's `run`; the sample is an `error` with this message,
    and `result` (what the agent did and spent before it was stopped), when given, is kept."""

    def __init__(self, message: str, result: object = None):
        super().__init__(message)
        self.result = result


class RunBudgetReached(HarnessError):
    """The run reached its USD cap (`budget.run_usd`): the sample is an `error`, not retried,
    and no new sample starts."""
