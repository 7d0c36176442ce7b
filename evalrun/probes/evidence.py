"""What a probe's expectations are judged on: the trajectory, the final output, and the workspace
before and after the agent.

`RecordingAgent` wraps whatever agent runs the probe. Before the agent starts it snapshots the
workspace; after the agent returns it keeps the evidence - trajectory, output, the before
snapshot - on the host, keyed by the sandbox (never inside it). Grading (`ProbeFormat.grade`)
takes it and the after snapshot itself. Keeping it outside the sandbox means an agent cannot
tamper with what it will be judged on; an agent that never returns (timeout) leaves no evidence,
and every expectation then fails with that reason.

Snapshots go through the Sandbox API only (`find` lists the files, `read_file` fetches them), so
probes run on every backend. `.git/` is left out: its
internals change with every commit and are not the agent's "diff".
"""

from __future__ import annotations

import hashlib
import json
import weakref
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from evalrun.agents.base import RunScope
from evalrun.errors import HarnessError, SandboxError
from evalrun.models.records import AgentResult, ToolCall
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.loader import Task

CONTENT_LIMIT = 1 << 20  # files larger than this are compared by hash only

# type, size, link target, path - NUL-separated; .git/ pruned (findutils, present in every image)
_LIST_FILES = [
    "find", ".", "-name", ".git", "-prune", "-o", "(", "-type", "f", "-o", "-type", "l", ")",
    "-printf", r"%y\t%s\t%l\t%P\0",
]  # fmt: skip


@dataclass(frozen=True)
class FileState:
    """One workspace file: its hash, and its text when it is small UTF-8 (else None)."""

    sha256: str
    text: str | None = None


Snapshot = dict[str, FileState]


async def snapshot(sandbox: Sandbox) -> Snapshot:
    """Every file in the workspace (but .git/), with contents of small text files.

    Hashes are computed here from the bytes read back (large files: by `sha256sum` in the
    sandbox), so listing costs one `find` however many files there are.
    """
    result = await sandbox.exec(_LIST_FILES, timeout_s=60)
    if not result.ok:  # e.g. a folder the agent made unreadable: the workspace's state
        raise OSError(f"could not list the workspace: {result.stderr.strip()[:300]}")
    files: Snapshot = {}
    for entry in sorted(e for e in result.stdout.split("\0") if e):
        kind, size, target, path = entry.split("\t", 3)
        if kind == "l":
            files[path] = FileState(hashlib.sha256(f"-> {target}".encode()).hexdigest())
        elif int(size) > CONTENT_LIMIT:
            summed = await sandbox.exec(["sha256sum", "--", path], timeout_s=60)
            files[path] = FileState(summed.stdout.split(" ", 1)[0])
        else:
            data = await sandbox.read_file(path)
            try:
                text: str | None = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            files[path] = FileState(hashlib.sha256(data).hexdigest(), text)
    return files


@dataclass
class Evidence:
    """Everything expectations look at. `finished` is False when the agent left no record."""

    trajectory: list[ToolCall] = field(default_factory=list)
    output: str = ""
    before: Snapshot = field(default_factory=dict)
    after: Snapshot = field(default_factory=dict)
    finished: bool = True

    def to_json(self) -> str:
        return json.dumps(
            {
                "trajectory": [step.model_dump(mode="json") for step in self.trajectory],
                "output": self.output,
                "before": {p: [f.sha256, f.text] for p, f in self.before.items()},
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Evidence:
        data = json.loads(text)
        return cls(
            trajectory=[ToolCall.model_validate(s) for s in data["trajectory"]],
            output=data["output"],
            before={p: FileState(sha, txt) for p, (sha, txt) in data["before"].items()},
        )


# The recording agent's evidence per sandbox, on the host; gone with the sandbox object.
_KEPT: weakref.WeakKeyDictionary[Sandbox, str] = weakref.WeakKeyDictionary()


async def read_evidence(sandbox: Sandbox) -> Evidence:
    """The evidence the recording agent left, with the workspace as it is now as `after`."""
    kept = _KEPT.pop(sandbox, None)
    evidence = Evidence.from_json(kept) if kept is not None else Evidence(finished=False)
    evidence.after = await snapshot(sandbox)
    return evidence


class RecordingAgent:
    """Runs `inner` and leaves the evidence a probe is graded on (see the module docstring).

    Named like the agent it wraps, so reports and the isolation warning are unchanged.
    """

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name

    def preflight(self) -> None:
        self.inner.preflight()

    def prepared(self, backend: SandboxBackend) -> AbstractContextManager[RunScope]:
        return self.inner.prepared(backend)

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        before = await snapshot(sandbox)
        try:
            result = await self.inner.run(task, sandbox)
        except (SandboxError, HarnessError):  # not the agent's doing: the sample is an error
            raise
        except Exception as exc:  # as the engine would record it; the probe is still graded
            result = AgentResult(error=f"{type(exc).__name__}: {exc}")
        _KEPT[sandbox] = Evidence(list(result.trajectory), result.output, before).to_json()
        return result
