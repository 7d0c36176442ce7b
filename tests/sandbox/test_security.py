"""Adversarial agents against the isolated backends: the hidden oracle must stay hidden.

Each agent here is a test double that acts only through `sandbox.exec` / `write_file`, like a real
agent would, and runs through the engine's `run_sample` so grading happens for real afterwards.
It searches for the task's verify/ and solution/ files, writes outside its workspace (directly and
through planted symlinks the harness later copies over), connects to a server on the host,
fork-bombs, sleeps forever, and reads every environment it can see. Every check names the
backend-agnostic behaviour a user relies on; none of them can pass on `sandbox=local`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalrun.agents.oracle import OracleAgent
from evalrun.models.records import AgentResult, Outcome
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import ExecResult, Sandbox, SandboxBackend
from evalrun.tasks.loader import fingerprint, load_task
from tests.conftest import REPO
from tests.sandbox.conftest import BACKEND_FACTORIES

LIMITS = Limits(setup_s=60, agent_s=120, verify_s=60, max_retries=0, retry_backoff_s=0.01)
SENTINEL = "adversary-ran"

ToolCalls = Callable[[Sandbox], Awaitable[list[str]]]


@dataclass
class AdversaryAgent:
    """Runs shell commands (and optional direct file-tool calls) and keeps everything it saw."""

    commands: list[str]
    tools: ToolCalls | None = None
    timeout_s: float | None = None
    name: str = "adversary"
    results: list[ExecResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox: Sandbox) -> AgentResult:
        for command in self.commands:
            self.results.append(await sandbox.exec(command, timeout_s=self.timeout_s))
        if self.tools is not None:
            self.notes += await self.tools(sandbox)
        return AgentResult(output=self.seen)

    @property
    def seen(self) -> str:
        parts = [r.stdout + r.stderr for r in self.results]
        return "\n".join(parts + self.notes)


@dataclass(frozen=True)
class SecretTask:
    folder: Path
    token: str
    home_canary: Path


@pytest.fixture
def secret_task(make_task) -> Iterator[SecretTask]:
    """A task whose hidden files carry a random token in their names and contents, plus a canary
    file holding the token in the user's real home folder (removed afterwards)."""
    token = secrets.token_hex(8)
    folder = make_task(
        "001-secret",
        files={
            "verify/verify.sh": (
                f"# oracle {token}\n"
                '[ "$(cat answer.txt 2>/dev/null)" = 42 ] && exit 0\n'
                'echo "FAIL: answer.txt does not contain 42"; exit 1\n'
            ),
            f"verify/_verifier/hidden_test_{token}.py": f"SECRET = {token!r}\n",
            f"solution/gold_{token}.txt": token,
        },
    )
    canary = Path.home() / f".evalrun-canary-{token}"
    canary.write_text(token)
    try:
        yield SecretTask(folder, token, canary)
    finally:
        canary.unlink(missing_ok=True)


def _attempt(backend: SandboxBackend, task_folder: Path, agent, limits: Limits = LIMITS):
    return asyncio.run(run_sample(load_task(task_folder), 0, agent, backend, limits, "security"))


def test_agent_cannot_find_the_oracle_or_the_solution(
    isolated_backend: SandboxBackend, secret_task: SecretTask
):
    token, folder = secret_task.token, secret_task.folder
    agent = AdversaryAgent(
        [
            f"find / -path /proc -prune -o -path /sys -prune -o -name '*{token}*' -print "
            "2>/dev/null; true",
            f"grep -rIl -D skip --exclude-dir={{proc,sys,dev,usr}} {token} / 2>/dev/null; true",
            f"cat {folder}/verify/verify.sh {folder}/solution/* {secret_task.home_canary} "
            "2>/dev/null; true",
            f"test -e {folder} && echo VISIBLE-TASK; test -e {REPO / 'tasks'} && echo VISIBLE-REPO"
            f"; echo {SENTINEL}",
        ]
    )
    record = _attempt(isolated_backend, folder, agent)
    assert SENTINEL in agent.seen, agent.seen
    assert token not in agent.seen
    assert "VISIBLE" not in agent.seen
    assert record.outcome is Outcome.failed


def test_writes_outside_the_workspace_fail_and_leave_the_host_unchanged(
    isolated_backend: SandboxBackend, secret_task: SecretTask
):
    folder, probe = secret_task.folder, Path.home() / f".evalrun-probe-{secret_task.token}"
    before = fingerprint(folder)
    verify_sh = folder / "verify/verify.sh"

    async def tools(box: Sandbox) -> list[str]:
        notes = []
        for path, data in ((str(verify_sh), "exit 0"), (str(probe), "pwned"), ("link", "x")):
            try:
                await box.write_file(path, data)
                notes.append(f"write_file {path}: no error (inside the sandbox only?)")
            except OSError as exc:
                notes.append(f"write_file {path}: {exc}")
        return notes

    agent = AdversaryAgent(
        [
            f"echo 'exit 0' > {verify_sh}; echo pwned > {probe}; touch {folder}/solution/new; "
            "touch /evalrun-root-probe /usr/evalrun-probe; true",
            # Planted links the harness will later copy verify/ over, or write through.
            f"ln -s {verify_sh} verify.sh; ln -s {folder}/solution _verifier; ln -s {probe} link"
            f"; ln -s {probe} answer.txt; echo {SENTINEL}",
        ],
        tools=tools,
    )
    try:
        record = _attempt(isolated_backend, folder, agent)
        assert SENTINEL in agent.seen
        assert fingerprint(folder) == before, "the task folder on the host was modified"
        assert not probe.exists(), "the agent wrote into the user's home"
        assert not Path("/usr/evalrun-probe").exists()
        assert not Path("/evalrun-root-probe").exists()
        assert record.outcome is Outcome.failed, (record.reason, record.verify_output)
        assert record.reason == "FAIL: answer.txt does not contain 42"
    finally:
        probe.unlink(missing_ok=True)
        for stray in (Path("/usr/evalrun-probe"), Path("/evalrun-root-probe")):
            with contextlib.suppress(OSError):
                stray.unlink()


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[str]]]:
    """A TCP server on every host interface; yields its port and the peers that connected."""
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.2)
    peers: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                conn, addr = server.accept()
                peers.append(addr[0])
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], peers
    finally:
        stop.set()
        thread.join()
        server.close()


def _host_addresses() -> list[str]:
    found = {"127.0.0.1"}
    with contextlib.suppress(OSError):
        found |= {
            info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        }
    return sorted(found)


def test_network_connections_fail(isolated_backend: SandboxBackend, make_task, host_server):
    port, peers = host_server
    probe = (
        "import socket\n"
        "print('interfaces', sorted(name for _, name in socket.if_nameindex()))\n"
        f"for host in {_host_addresses()!r}:\n"
        "    try:\n"
        f"        socket.create_connection((host, {port}), timeout=3).close()\n"
        "        print('CONNECTED', host)\n"
        "    except OSError as exc:\n"
        "        print('refused', host, type(exc).__name__)\n"
    )
    agent = AdversaryAgent([f"python3 - <<'EOF'\n{probe}EOF\necho {SENTINEL}"])
    _attempt(isolated_backend, make_task(), agent)
    assert SENTINEL in agent.seen and "refused 127.0.0.1" in agent.seen, agent.seen
    assert "CONNECTED" not in agent.seen
    assert "interfaces ['lo']" in agent.seen
    assert peers == []


def test_fork_bomb_and_endless_sleep_are_stopped_and_the_run_goes_on(
    isolated_backend: SandboxBackend, isolated_backend_id: str, make_task, stray_processes
):
    task = make_task()
    marker = f"evalrun-bomb-{secrets.token_hex(6)}"
    bomb = AdversaryAgent(
        [
            f"bomb() {{ bomb | bomb & }}; bomb; sleep 1; echo procs=$(ls /proc | grep -c '^[0-9]')"
            f"; sleep 300; : {marker}"
        ],
        timeout_s=3.0,
    )
    bombed = _attempt(isolated_backend, task, bomb)
    assert bomb.results, f"the bomb never returned: {bombed.outcome} {bombed.reason}"
    assert bomb.results[0].timed_out
    assert "Resource temporarily unavailable" in bomb.seen, "no process limit stopped the bomb"
    assert bombed.outcome is Outcome.failed

    sleeper = AdversaryAgent([f"sleep infinity; : {marker}"])
    short = Limits(setup_s=60, agent_s=2.0, verify_s=60, max_retries=0)
    slept = _attempt(isolated_backend, task, sleeper, short)
    assert slept.timed_out_phase == "agent" and slept.outcome is Outcome.failed

    after = _attempt(isolated_backend, task, OracleAgent())
    assert after.outcome is Outcome.passed, after.reason
    if BACKEND_FACTORIES[isolated_backend_id].host_processes:
        assert stray_processes(marker) == []


def test_sandbox_environment_carries_no_host_secrets(
    isolated_backend: SandboxBackend, make_task, monkeypatch
):
    token = secrets.token_hex(8)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"):
        monkeypatch.setenv(name, f"{name.lower()}-{token}")
    agent = AdversaryAgent(
        [
            "env; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null; "
            f'grep -rs {token} /etc /tmp "$HOME" . ; echo {SENTINEL}'
        ]
    )
    _attempt(isolated_backend, make_task(), agent)
    assert SENTINEL in agent.seen and "PATH=" in agent.seen
    assert token not in agent.seen
