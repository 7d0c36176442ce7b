"""What a Harbor task asks of the sandbox its samples run in, read from `[environment]` and the
per-phase `[agent]` / `[verifier]` tables (and each `[[steps]]`' own).

- **Network**, per Harbor's policy model: `[environment] network_mode` (or the older
  `allow_internet`) is the baseline, `[agent]`/`[verifier]` `network_mode` override it for
  their phase. `no-network` means no network on every backend; `public` means the task needs
  the network; `allowlist` with hosts (`allowed_hosts`, the phase's own) means only those hosts:
  docker enforces it through its egress gate (`evalrun.sandbox.docker.egress`), the other
  backends give such a phase their whole network and the run says so before it starts (an empty
  allow-list is no network anywhere). A task that declares nothing gets what the backend gives
  (no network on bwrap and docker by default). The agent's phase (with the setup) and the
  verifier's may differ: each backend switches between them (docker reattaches the container;
  bwrap and local decide per command). Steps whose agent phases (or verifier phases) want
  different networks are unsupported.
- **A separate verifier** (`separate_verifier`: `[verifier] environment_mode = "separate"`, or
  a `[verifier.environment]`): the sandbox it runs in (its image by Harbor's precedence), the
  `[[verifier.collect]]` commands run in the agent's sandbox first, and the artifacts it gets.
- **Several containers** (`environment/docker-compose.yaml` or `.yml`): `compose_file`, run as a
  compose project with `main` as the sandbox where the backend can (docker).
- **Workspace path** (`workdir`), **CPU, memory and disk** (`cpus`, `memory_mb` / `memory`,
  `storage_mb` / `storage`: limits where the backend enforces them, `SandboxBackend.task_limits`),
  **variables every command sees** (`[environment.env]`), **the agent's user** (`[agent] user`)
  and **an image of its own** (its prebuilt `docker_image`, else the Dockerfile in environment/).
- **GPUs** (`gpus`): docker gives them through the engine's device requests where it has a GPU
  runtime; every other backend skips such a task with the reason.
- **Features evalrun cannot provide** (`unsupported`): TPUs, Windows containers, HTTP
  headers for an MCP server (the servers themselves are the agent's: `TaskSpec.mcp_servers`),
  a separate verifier of several containers (tests/docker-compose.yaml, or a collect
  command or artifact in a service besides `main`), a separate verifier in a multi-step task.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evalrun.errors import TaskFormatError
from evalrun.sandbox.base import Network, SandboxSpec, TaskImage, bad_workdir
from evalrun.tasks.base import Artifact, CollectCommand, SeparateVerifier
from evalrun.tasks.harbor.toml import (
    MAIN_SERVICE,
    EnvironmentTable,
    HarborToml,
    NetworkMode,
    Phase,
    fill_templates,
)

ARTIFACTS_DIR = "/logs/artifacts"  # Harbor's: what the agent publishes for a separate verifier


Policy = tuple[Network, tuple[str, ...]]  # a phase's network, and its hosts when an allow-list


def phase_policy(phase: Phase | EnvironmentTable) -> Policy:
    """One table's own network, with the hosts it allows when that is an allow-list."""
    mode = phase.network_mode
    if mode is None and phase.allowed_hosts:
        mode = NetworkMode.allowlist  # hosts alone imply an allow-list (Harbor refuses them)
    if mode is None and isinstance(phase, EnvironmentTable) and phase.allow_internet is not None:
        return (Network.public if phase.allow_internet else Network.none), ()
    if mode is None:
        return Network.unspecified, ()
    if mode is NetworkMode.allowlist:
        hosts = tuple(dict.fromkeys(phase.allowed_hosts or ()))
        return (Network.allowlist, hosts) if hosts else (Network.none, ())  # empty: no egress
    return (Network.none if mode is NetworkMode.no_network else Network.public), ()


def sample_networks(config: HarborToml) -> tuple[Policy, Policy, str | None]:
    """The network of a sample's agent phase (and setup) and of its verifier phase, or why no
    sandbox can honour every step's: each phase's table, else `[environment]`'s baseline."""
    baseline = phase_policy(config.environment)
    tables: dict[str, list[tuple[str, Phase]]] = {
        "agent": [("agent", config.agent)],
        "verifier": [("verifier", config.verifier)],
    }
    for index, step in enumerate(config.steps or ()):
        tables["agent"].append((f"steps[{index}].agent", step.agent))
        tables["verifier"].append((f"steps[{index}].verifier", step.verifier))
    chosen: list[Policy] = []
    for phase, where in tables.items():
        wanted = {}
        for name, table in where:
            own = phase_policy(table)
            wanted[name] = own if own[0] is not Network.unspecified else baseline
        if len(set(wanted.values())) > 1:
            detail = ", ".join(f"[{k}] {_said(v)}" for k, v in wanted.items())
            clash = f"a different network in the {phase} phase of different steps ({detail})"
            return baseline, baseline, clash
        chosen.append(next(iter(wanted.values())))
    return chosen[0], chosen[1], None


def _said(policy: Policy) -> str:
    network, hosts = policy
    return f"allowlist {list(hosts)}" if hosts else network.value


def unsupported(config: HarborToml, environment_dir: Path, tests_dir: Path) -> list[str]:
    """What the task needs that no evalrun backend provides."""
    env = config.environment
    problems = []
    if env.os == "windows":
        problems.append("Windows containers ([environment] os = 'windows')")
    if env.tpu:
        problems.append("a TPU ([environment.tpu])")
    problems += [
        f"HTTP headers for MCP server {s.name!r} ([environment] mcp_servers: evalrun hands "
        "an agent a server's url, not its headers)"
        for s in env.mcp_servers
        if s.headers
    ]
    problems += _separate_unsupported(config)
    if config.verifier.separate and (tests_dir / "docker-compose.yaml").is_file():
        problems.append("several containers for the separate verifier (tests/docker-compose.yaml)")
    users = {s.agent.user for s in config.steps or () if s.agent.user is not None}
    if users - {config.agent.user}:
        problems.append(f"a different agent user per step ({', '.join(sorted(users))})")
    *_, clash = sample_networks(config)
    if clash:
        problems.append(clash)
    return problems


def _separate_unsupported(config: HarborToml) -> list[str]:
    """What of a separate verifier evalrun cannot do: in a multi-step task, or reaching a compose
    service other than the agent's (`main`)."""
    verifiers = [("verifier", config.verifier)]
    verifiers += [(f"steps.{s.name}.verifier", s.verifier) for s in config.steps or ()]
    if config.steps:
        return [
            f"a separate verifier in a multi-step task ([{where}] environment_mode or environment)"
            for where, verifier in verifiers
            if verifier.separate
        ]
    if not config.verifier.separate:
        return []
    services = {c.service for c in config.verifier.collect if c.service != MAIN_SERVICE}
    services |= {str(a.service) for a in config.artifacts if not a.on_main}
    return [
        f"a compose service besides main ({s!r}, for the separate verifier)"
        for s in sorted(services)
    ]


def sandbox_spec(
    config: HarborToml, task_file: Path, task_id: str, environment_dir: Path, env: dict[str, str]
) -> SandboxSpec:
    """The `SandboxSpec` of a task; raises `TaskFormatError` for a workdir no sandbox can have."""
    table = config.environment
    image = None
    context = environment_dir if (environment_dir / "Dockerfile").is_file() else None
    if context is not None or table.docker_image:
        image = TaskImage(task_id, context, table.docker_image or None, _build_timeout(table))
    agent, verifier, _ = sample_networks(config)
    spec = _table_spec(table, task_file, "environment", image, env, agent)
    return replace(
        spec,
        verifier_network=verifier[0] if verifier[0] is not agent[0] else None,
        verifier_allowed_hosts=verifier[1] if verifier[1] != agent[1] else None,
        user=config.agent.user,
        compose_file=compose_file(environment_dir),
    )


def compose_file(environment_dir: Path) -> Path | None:
    """The task's compose file (Harbor reads docker-compose.yaml; .yml is taken too)."""
    for name in ("docker-compose.yaml", "docker-compose.yml"):
        if (environment_dir / name).is_file():
            return environment_dir / name
    return None


def separate_verifier(
    config: HarborToml, task_file: Path, task_id: str, tests_dir: Path, agent: SandboxSpec
) -> SeparateVerifier | None:
    """Where a separate verifier runs (None: in the agent's sandbox), as Harbor 0.26 resolves
    it: `[verifier.environment]`'s docker_image (its tests inside), else tests/Dockerfile (built
    from tests/, its tests inside), else the task's own image (`agent.image`, tests copied in).
    `[verifier.environment]`, when given, replaces `[environment]`'s workdir, limits and env."""
    table = config.verifier.environment
    if not config.verifier.separate:
        return None
    image, bundled = agent.image, False
    if table is not None and table.docker_image is not None:
        image, bundled = TaskImage(f"{task_id}-verifier", None, table.docker_image), True
    elif (tests_dir / "Dockerfile").is_file():
        timeout = _build_timeout(table or config.environment)
        image, bundled = TaskImage(f"{task_id}-verifier", tests_dir, None, timeout), True
    _, network, _ = sample_networks(config)
    if table is None:
        spec = replace(agent, image=image, network=network[0], allowed_hosts=network[1])
        spec = replace(spec, verifier_network=None, verifier_allowed_hosts=None, compose_file=None)
    else:
        if phase_policy(config.verifier)[0] is Network.unspecified:
            own = phase_policy(table)
            network = network if own[0] is Network.unspecified else own
        env = fill_templates(table.env, task_file, "verifier.environment.env")
        spec = _table_spec(table, task_file, "verifier.environment", image, env, network)
        spec = replace(spec, user=config.agent.user)
    # `[[verifier.collect]]`: all in the agent's sandbox (`unsupported` refuses another service)
    collect = tuple(
        CollectCommand(c.command, c.timeout_sec, c.user) for c in config.verifier.collect
    )
    return SeparateVerifier(spec, artifacts(config), collect, bundled)


def artifacts(config: HarborToml) -> tuple[Artifact, ...]:
    """What a separate verifier gets of the agent's sandbox: /logs/artifacts (unless an entry
    names it) and each `artifacts` entry, by its source path."""
    found = [Artifact(a.source.rstrip("/") or "/", a.exclude) for a in config.artifacts]
    if not any(a.path == ARTIFACTS_DIR for a in found):
        found.insert(0, Artifact(ARTIFACTS_DIR))
    return tuple(found)


def _build_timeout(table: EnvironmentTable) -> float:
    return table.build_timeout_sec or TaskImage.build_timeout_s


def _table_spec(
    table: EnvironmentTable,
    task_file: Path,
    where: str,
    image: TaskImage | None,
    env: dict[str, str],
    network: Policy,
) -> SandboxSpec:
    """A sandbox as an `[environment]`-like table asks; `TaskFormatError` for a bad workdir."""
    if table.workdir is not None:
        problem = bad_workdir(table.workdir)
        if problem:
            raise TaskFormatError(task_file, problem, field=f"{where}.workdir")
    return SandboxSpec(
        image=image,
        workdir=table.workdir.rstrip("/") if table.workdir else None,
        network=network[0],
        allowed_hosts=network[1],
        cpus=table.cpus,
        memory_mb=table.memory_limit_mb,
        storage_mb=table.storage_limit_mb,
        gpus=table.gpus or None,
        env=tuple(sorted(env.items())),
    )
