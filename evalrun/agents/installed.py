"""The seam every off-the-shelf agent CLI preset shares: install, gateway, launch, convert.

A preset (`evalrun/agents/presets/<name>.py`, one class) says only what differs per agent:

    class MyAgent(InstalledAgent):
        name = "my_agent"
        apis = ("openai-compatible", "openai")          # provider.api values it can speak
        def package(self) -> Package: ...               # where it comes from, pinned
        def cli(self, root) -> str: ...                 # its executable in the install folder
        def command(self, launch: Launch) -> str: ...   # the non-interactive command line
        def convert(self, log: str) -> Converted: ...  # agent log -> trajectory + answer

plus one YAML in conf/agent/ (`_target_` and the pinned `version`). Everything else is here:

- `prepared(backend)` (once per run, before the first sample): the provider's key variable is
  set, the CLI is in the host cache (installed on first use), the gateway runs, the backend shows
  the install and the gateway's socket folder read-only, and one throwaway sandbox proves the CLI
  answers at the pinned version and the gateway answers through the in-sandbox forwarder. The
  same proof runs once in each task's prebuilt image (`RunScope.cannot_host`): a task whose
  image cannot host the agent (no python3, no bash) is skipped with the reason, before any sample.
- `run(task, sandbox)`: a socket of the sample's own on the gateway; a scratch folder with the
  prompt, the forwarder and a launcher; the launcher starts the forwarder and runs the command
  with the gateway's loopback URL in `$EVALRUN_GATEWAY_URL`; the agent log is converted; usage
  and cost are the gateway's meter for this sample, never the agent's own report. An ATIF
  trajectory the CLI wrote itself (`$EVALRUN_ATIF_FILE`, or Harbor's /logs/agent/trajectory.json:
  `evalrun.agents.atif_files`) is kept for the sample's trajectory.json.
- MCP: a task's servers (`TaskSpec.mcp_servers`) reach the preset as `Launch.mcp_servers`, and
  a preset that speaks MCP writes them into its CLI's own config (`files`); the CLI starts a
  stdio server itself, in the sandbox. A preset whose CLI has no MCP client says why
  (`mcp_refusal`), and such tasks are skipped for it.
- Outcomes: a missing CLI, a forwarder or gateway failure, or a provider 429/5xx/401/403 that was
  the last thing the agent saw are `HarnessError`s (the sample is an `error`, named), never an
  agent fail. A per-sample budget refusal is kept on the sample's agent error and it is graded;
  the run's USD cap (`budget.run_usd`) ends it as an `error` and stops new samples.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalrun.agents.atif_files import ATIF_ENV, ATIF_FILE, read_agent_atif
from evalrun.agents.base import RunScope, progress
from evalrun.agents.command import _read_optional, _scratch_folder
from evalrun.agents.install import Installed, Package, ensure_installed, installed
from evalrun.config.providers import Provider
from evalrun.config.schema import InstalledAgentConf
from evalrun.errors import HarnessError, RunBudgetReached, SandboxError, UsageError, bad_value
from evalrun.gateway.ledger import Account, Budget, Ledger
from evalrun.gateway.server import Gateway, Session, Upstream
from evalrun.models.records import AgentResult, ToolCall
from evalrun.models.writable import tail_text
from evalrun.sandbox.base import DEFAULT_SPEC, Sandbox, SandboxBackend, SandboxSpec
from evalrun.tasks.base import McpServer
from evalrun.tasks.loader import Task

MISSING_CLI, NO_FORWARDER = 90, 91
GATEWAY_KEY = "evalrun-gateway"  # what agents get as their "key": the real one stays on the host
FORWARDER = Path(__file__).resolve().parent.parent / "gateway" / "forwarder.py"
LAUNCHER = r"""
scratch=$1 socket=$2 cli=$3; shift 3
say() { echo "evalrun: $*" >&2; }
command -v python3 >/dev/null || { say "no python3 in the sandbox for the gateway forwarder"; exit 91; }
python3 "$scratch/forwarder.py" "$socket" "$scratch/port" 2>"$scratch/forwarder.log" &
for _ in $(seq 400); do [ -s "$scratch/port" ] && break; sleep 0.025; done
[ -s "$scratch/port" ] || { say "the gateway forwarder did not start: $(cat "$scratch/forwarder.log")"; exit 91; }
export EVALRUN_GATEWAY_URL="http://127.0.0.1:$(cat "$scratch/port")"
[ -e "$cli" ] || { say "agent CLI missing in the sandbox: $cli"; exit 90; }
eval "$1"
"""  # noqa: E501
HEALTH = (
    "python3 -c 'import os,urllib.request;"
    'print(urllib.request.urlopen(os.environ["EVALRUN_GATEWAY_URL"]+"/__evalrun/health").read().decode())'
    "'"
)


@dataclass(frozen=True)
class Launch:
    """What a preset's command line may use (paths are in-sandbox, already shell-safe only where
    noted: quote the others with `shlex.quote`)."""

    cli: str  # the executable
    root: str  # the install folder
    runtime: list[str]  # runtime folders (node), if any
    prompt_file: str
    scratch: str  # a folder of the agent's own, outside the workspace
    log_file: str  # where the command should leave its agent log
    workdir: str
    model: str
    url: str = '"$EVALRUN_GATEWAY_URL"'  # a shell expression, already quoted
    mcp_servers: tuple[McpServer, ...] = ()  # the task's, for the CLI's own MCP config


@dataclass
class Converted:
    """An agent log turned into evalrun's shape."""

    trajectory: list[ToolCall] = field(default_factory=list)
    output: str = ""
    notes: list[str] = field(default_factory=list)


class InstalledAgent:
    """Base of every preset; see the module docstring."""

    name = "installed"
    apis: tuple[str, ...] = ()
    log_name = "agent.jsonl"
    env_defaults: Mapping[str, str] = {}
    mcp_refusal: str | None = None  # why the CLI cannot use a task's MCP servers (None: it can)

    def __init__(
        self,
        version: str,
        provider: Provider,
        budget: Mapping[str, Any] | None = None,
        model: str | None = None,
        env: Mapping[str, str] | None = None,
        args: str = "",
        timeout_s: float | None = None,
        auto_install: bool = InstalledAgentConf.auto_install,
    ):
        self.version = str(version)
        self.provider = provider
        self.budget = Budget(**{k: v for k, v in dict(budget or {}).items() if v is not None})
        self.model = model or provider.model
        self.env = {str(k): str(v) for k, v in dict(env or {}).items()}
        self.args = args or ""
        self.timeout_s = timeout_s
        self.auto_install = auto_install
        self._gateway: Gateway | None = None
        self._install: Installed | None = None
        self._runtime: list[str] = []
        self._hosts: dict[str, str | None] = {}  # prebuilt image -> why it cannot host us

    # --- what a preset says -----------------------------------------------------------------
    def package(self) -> Package:
        raise NotImplementedError

    def cli(self, root: str) -> str:
        raise NotImplementedError

    def command(self, launch: Launch) -> str:
        raise NotImplementedError

    def version_command(self, launch: Launch) -> str:
        return f"{shlex.quote(launch.cli)} --version"

    def files(self, launch: Launch) -> dict[str, str]:
        """Config files to write before the command runs: {in-sandbox path: text} (a preset
        that speaks MCP registers `launch.mcp_servers` in its CLI's own config here)."""
        return {}

    def convert(self, log: str) -> Converted:
        raise NotImplementedError

    # --- the run-long part ------------------------------------------------------------------
    def preflight(self) -> None:
        if not isinstance(self.provider, Provider):
            raise bad_value("agent.provider", "a provider config", self.provider)
        self.provider.check()
        if self.apis and self.provider.api not in self.apis:
            raise UsageError(
                f"agent={self.name} speaks {' / '.join(self.apis)}, but provider="
                f"{self.provider.name} is provider.api={self.provider.api}; choose a provider "
                "of that kind (see `evalrun docs agents`)"
            )

    def install(self, *, force: bool = False) -> Installed:
        target = installed(self.name, self.package())
        if not target.ready and not self.auto_install and not force:
            raise UsageError(
                f"agent={self.name} {self.version} is not installed; run "
                f"`evalrun agents install {self.name}`"
            )
        if not target.ready or force:
            print(f"installing {self.name} {self.version} (once) ...", file=sys.stderr)
        return ensure_installed(self.name, self.package(), force=force)

    @contextmanager
    def prepared(self, backend: SandboxBackend) -> Iterator[RunScope]:
        self._install = self.install()
        folders = self._install.folders()
        self._runtime = [str(p) for p in folders[1:]]
        backend.add_read_only(folders, live=False)
        upstream = Upstream(
            base_url=self.provider.base_url or "",
            auth=self.provider.auth_style(),
            key_env=self.provider.api_key_env,
            headers_env=self.provider.headers_env,
        )
        ledger = Ledger(self.budget, lambda model: self.provider.price_for(model))
        with Gateway(upstream, ledger) as gateway:
            assert gateway.folder is not None
            backend.add_read_only([gateway.folder], live=True)
            self._gateway = gateway
            try:
                problem = asyncio.run(self._check_in_sandbox(backend, DEFAULT_SPEC))
                if problem:
                    raise UsageError(f"agent={self.name}: {problem}")
                yield RunScope(
                    stop_reason=lambda: ledger.run_stopped,
                    cannot_host=lambda spec: self._cannot_host(backend, spec),
                    mcp_refusal=self.mcp_refusal,
                )
            finally:
                self._gateway = None
                self._hosts.clear()

    def _cannot_host(self, backend: SandboxBackend, spec: SandboxSpec) -> str | None:
        """Why a task's prebuilt image cannot host this agent (its CLI and the gateway
        forwarder, e.g. no python3 or no bash in it), proven in one sandbox per image; None
        for every other spec (a Dockerfile task is built FROM the base that hosts it)."""
        image = spec.image
        if image is None or image.prebuilt is None or image.context_dir is not None:
            return None
        if image.prebuilt not in self._hosts:
            problem = asyncio.run(self._check_in_sandbox(backend, spec))
            if problem:  # the launcher's own words when it said why, on one line
                said = problem.rpartition("evalrun: ")[2]
                problem = " ".join(said.splitlines()[0].split())[:300]
            self._hosts[image.prebuilt] = problem and (
                f"agent={self.name} cannot run in its image {image.prebuilt!r}: {problem}"
            )
        return self._hosts[image.prebuilt]

    async def _start(
        self, sandbox: Sandbox, session: Session, prompt: str, servers: tuple[McpServer, ...] = ()
    ) -> tuple[str, Launch]:
        assert self._install is not None
        scratch = await _scratch_folder(sandbox)
        root = str(self._install.root)
        launch = Launch(
            cli=self.cli(root),
            root=root,
            runtime=self._runtime,
            prompt_file=f"{scratch}/prompt.md",
            scratch=scratch,
            log_file=f"{scratch}/{self.log_name}",
            workdir=sandbox.workdir,
            model=self.model,
            mcp_servers=servers,
        )
        await sandbox.write_file(launch.prompt_file, prompt)
        await sandbox.write_file(f"{scratch}/forwarder.py", FORWARDER.read_bytes())
        await sandbox.write_file(f"{scratch}/launch.sh", LAUNCHER)
        for path, text in self.files(launch).items():
            await sandbox.write_file(path, text)
        head = ["bash", f"{scratch}/launch.sh", scratch, str(session.socket), launch.cli]
        return shlex.join(head), launch

    def _env(self) -> dict[str, str]:
        return {**self.env_defaults, **self.env}

    async def _check_in_sandbox(self, backend: SandboxBackend, spec: SandboxSpec) -> str | None:
        """Why the CLI does not answer at the pinned version, or the gateway not through the
        in-sandbox forwarder, in a sandbox of `spec` (None: both do)."""
        assert self._gateway is not None
        session = self._gateway.open("preflight")
        try:
            async with backend.open(f"{self.name}-preflight", spec) as box:
                head, launch = await self._start(box, session, "preflight")
                check = f"{self.version_command(launch)} && {HEALTH}"
                result = await box.exec(
                    f"{head} {shlex.quote(check)}", env=self._env(), timeout_s=120
                )
        except SandboxError as exc:
            return f"a sandbox={backend.name} sandbox did not start: {exc}"
        finally:
            self._gateway.close(session)
        said = f"{result.stdout}\n{result.stderr}".strip()
        if not result.ok:
            hint = ""
            if "Out of memory" in said and backend.name == "bwrap":
                hint = " (node reserves more address space than sandbox.memory_mb allows: "
                hint += "run with sandbox.memory_mb=null)"
            return (
                f"preflight in a sandbox={backend.name} sandbox failed "
                f"(exit {result.exit_code}): {tail_text(said, 600)}{hint}"
            )
        if self.version not in result.stdout or "evalrun-gateway ok" not in result.stdout:
            return (
                f"expected version {self.version} and an answering gateway in the sandbox, "
                f"got: {tail_text(said, 600)}"
            )
        return None

    # --- one sample -------------------------------------------------------------------------
    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        if self._gateway is None:
            raise HarnessError(f"agent={self.name} ran outside its prepared() scope (no gateway)")
        session = self._gateway.open(f"{task.id}-{uuid.uuid4().hex[:8]}")
        live = progress()
        try:
            head, launch = await self._start(
                sandbox, session, task.spec.prompt, task.spec.mcp_servers
            )
            command = f"{head} {shlex.quote(self.command(launch))}"
            env = {**self._env(), ATIF_ENV: f"{launch.scratch}/{ATIF_FILE}"}
            result = await sandbox.exec(command, env=env, timeout_s=self.timeout_s)
            log = await _read_optional(sandbox, launch.log_file) or ""
            own, atif_notes = await read_agent_atif(sandbox, launch.scratch, launch.prompt_file)
        except asyncio.CancelledError:
            if live is not None:
                live.usage = session.account.usage()
                live.model_calls = list(session.account.calls)
            raise
        finally:
            self._gateway.close(session)
        converted = self.convert(log)
        problems = [*converted.notes, *atif_notes]
        if result.timed_out:
            problems.append(f"{self.name} timed out after {self.timeout_s:g}s")
        elif result.exit_code != 0:
            detail = tail_text(result.stderr.strip() or result.stdout.strip(), 500)
            problems.append(f"{self.name} exited {result.exit_code}: {detail}".rstrip(": "))
        if session.account.refused:
            problems.append(session.account.refused)
        done = AgentResult(
            output=converted.output,
            trajectory=converted.trajectory,
            usage=session.account.usage(),
            model_calls=list(session.account.calls),
            error="; ".join(problems) or None,
            atif=own.to_json() if own is not None else None,
        )
        _raise_harness_failure(self.name, result.exit_code, result.stderr, session.account, done)
        return done


def _raise_harness_failure(
    name: str, exit_code: int | None, stderr: str, account: Account, done: AgentResult
) -> None:
    """Failures the agent cannot cause end the sample as a harness `error`, named; what the
    agent did and spent until then (`done`) stays on the sample."""
    if exit_code == MISSING_CLI and "agent CLI missing" in stderr:
        raise HarnessError(
            f"agent CLI missing: {stderr.strip()[-300:]} (evalrun agents install {name})", done
        )
    if exit_code == NO_FORWARDER and "evalrun:" in stderr:
        raise HarnessError(
            f"model gateway unreachable in the sandbox: {stderr.strip()[-300:]}", done
        )
    if account.run_cap_hit:
        raise RunBudgetReached(f"run budget reached: {account.refused}", done)
    if account.gateway_failures and not account.upstream_successes:
        raise HarnessError(f"model gateway failed: {account.gateway_failures[-1]}", done)
    if account.upstream_failures and account.last_failed:
        status, message = account.upstream_failures[-1]
        if status == 429:
            kind = "provider rate limit (HTTP 429) outlived the agent's retries"
        elif status in (401, 403):
            kind = f"provider refused the credentials (HTTP {status}: auth)"
        elif status >= 500:
            kind = f"provider server error (HTTP {status}) outlived the agent's retries"
        else:
            return
        raise HarnessError(f"{kind}: {message}".rstrip(": "), done)
