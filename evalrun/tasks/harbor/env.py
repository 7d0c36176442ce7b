"""What a Harbor task asks of the sandbox its samples run in, read from `[environment]` and the
per-phase `[agent]` / `[verifier]` tables (and each `[[steps]]`' own).

- **Network**, per Harbor's policy model: `[environment] network_mode` (or the older
  `allow_internet`) is the baseline, `[agent]`/`[verifier]` `network_mode` override it for
  their phase. `no-network` means no network on every backend; `public`, and `allowlist` with
  hosts, mean the task needs the network (evalrun cannot filter by host, so an allow-list gets
  the backend's whole network where it has one). A task that declares nothing gets what the
  backend gives (no network on bwrap and docker by default). The agent's phase (with the setup)
  and the verifier's may differ: each backend switches between them (docker reattaches the
  container; bwrap and local decide per command). Steps whose agent phases (or verifier phases)
  want different networks are unsupported.
- **Workspace path** (`workdir`), **CPU, memory and disk** (`cpus`, `memory_mb` / `memory`,
  `storage_mb` / `storage`: limits where the backend enforces them, `SandboxBackend.task_limits`),
  **variables every command sees** (`[environment.env]`), **the agent's user** (`[agent] user`)
  and **an image of its own** (its prebuilt `docker_image`, else the Dockerfile in environment/).
- **Features evalrun cannot provide** (`unsupported`): GPUs, TPUs, Windows containers, MCP
  servers, a separate verifier container, several containers (docker-compose.yaml).
"""

from __future__ import annotations

from pathlib import Path

from evalrun.errors import TaskFormatError
from evalrun.sandbox.base import Network, SandboxSpec, TaskImage, bad_workdir
from evalrun.tasks.harbor.toml import EnvironmentTable, HarborToml, NetworkMode, Phase


def phase_network(phase: Phase | EnvironmentTable) -> Network:
    """One table's own network policy (`unspecified` when it says nothing)."""
    mode = phase.network_mode
    if mode is None and phase.allowed_hosts:
        mode = NetworkMode.allowlist  # Harbor: hosts alone imply an allow-list
    if mode is None and isinstance(phase, EnvironmentTable) and phase.allow_internet is not None:
        return Network.public if phase.allow_internet else Network.none
    if mode is None:
        return Network.unspecified
    if mode is NetworkMode.no_network or (
        mode is NetworkMode.allowlist and not phase.allowed_hosts
    ):
        return Network.none  # an empty allow-list denies all egress
    return Network.public


def sample_networks(config: HarborToml) -> tuple[Network, Network, str | None]:
    """The network of a sample's agent phase (and setup) and of its verifier phase, or why no
    sandbox can honour every step's: each phase's table, else `[environment]`'s baseline."""
    baseline = phase_network(config.environment)
    tables: dict[str, list[tuple[str, Phase]]] = {
        "agent": [("agent", config.agent)],
        "verifier": [("verifier", config.verifier)],
    }
    for index, step in enumerate(config.steps or ()):
        tables["agent"].append((f"steps[{index}].agent", step.agent))
        tables["verifier"].append((f"steps[{index}].verifier", step.verifier))
    chosen: list[Network] = []
    for phase, where in tables.items():
        wanted = {}
        for name, table in where:
            own = phase_network(table)
            wanted[name] = own if own is not Network.unspecified else baseline
        if len(set(wanted.values())) > 1:
            detail = ", ".join(f"[{k}] {v.value}" for k, v in wanted.items())
            return (
                baseline,
                baseline,
                (f"a different network in the {phase} phase of different steps ({detail})"),
            )
        chosen.append(next(iter(wanted.values())))
    return chosen[0], chosen[1], None


def unsupported(config: HarborToml, environment_dir: Path) -> list[str]:
    """What the task needs that no evalrun backend provides."""
    env = config.environment
    problems = []
    if env.os == "windows":
        problems.append("Windows containers ([environment] os = 'windows')")
    if env.gpus:
        problems.append(f"GPUs ([environment] gpus = {env.gpus})")
    if env.tpu:
        problems.append("a TPU ([environment.tpu])")
    if env.mcp_servers:
        names = ", ".join(str(s.get("name", "?")) for s in env.mcp_servers)
        problems.append(f"MCP servers ([environment] mcp_servers: {names})")
    verifiers = [("verifier", config.verifier)]
    verifiers += [(f"steps.{s.name}.verifier", s.verifier) for s in config.steps or ()]
    for where, verifier in verifiers:
        if verifier.separate:
            problems.append(f"a separate verifier container ([{where}] environment_mode)")
    for name in ("docker-compose.yaml", "docker-compose.yml"):
        if (environment_dir / name).is_file():
            problems.append(f"several containers (environment/{name})")
    users = {s.agent.user for s in config.steps or () if s.agent.user is not None}
    if users - {config.agent.user}:
        problems.append(f"a different agent user per step ({', '.join(sorted(users))})")
    *_, clash = sample_networks(config)
    if clash:
        problems.append(clash)
    return problems


def sandbox_spec(
    config: HarborToml, task_file: Path, task_id: str, environment_dir: Path, env: dict[str, str]
) -> SandboxSpec:
    """The `SandboxSpec` of a task; raises `TaskFormatError` for a workdir no sandbox can have."""
    table = config.environment
    image = None
    context = environment_dir if (environment_dir / "Dockerfile").is_file() else None
    if context is not None or table.docker_image:
        timeout = table.build_timeout_sec or TaskImage.build_timeout_s
        image = TaskImage(task_id, context, table.docker_image or None, timeout)
    if table.workdir is not None:
        problem = bad_workdir(table.workdir)
        if problem:
            raise TaskFormatError(task_file, problem, field="environment.workdir")
    agent, verifier, _ = sample_networks(config)
    return SandboxSpec(
        image=image,
        workdir=table.workdir.rstrip("/") if table.workdir else None,
        network=agent,
        verifier_network=verifier if verifier is not agent else None,
        cpus=table.cpus,
        memory_mb=table.memory_limit_mb,
        storage_mb=table.storage_limit_mb,
        env=tuple(sorted(env.items())),
        user=config.agent.user,
    )
