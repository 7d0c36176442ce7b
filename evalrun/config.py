"""Typed schemas for every config group, registered in Hydra's ConfigStore.

Each group option under `conf/<group>/<option>.yaml` starts from one of these schemas through its
defaults list, so a typo (`sandbox.imagee=...`) or a wrong type (`trials=many`) fails at compose
time with Hydra's message, before anything runs. `_target_` names the class Hydra instantiates:
Hydra's instantiate is the only registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
REPO_ROOT = CONF_DIR.parent


# --- sandbox ---------------------------------------------------------------------------------
@dataclass
class SandboxConf:
    _target_: str = MISSING
    output_limit_bytes: int = 256 * 1024


@dataclass
class LocalSandboxConf(SandboxConf):
    _target_: str = "evalrun.sandbox.local.LocalBackend"


@dataclass
class BwrapSandboxConf(SandboxConf):
    _target_: str = "evalrun.sandbox.bwrap.BwrapBackend"
    memory_mb: int | None = 8192  # RLIMIT_AS per process; null: no limit
    max_processes: int | None = 512  # RLIMIT_NPROC for the sample; null: no limit
    extra_ro_paths: list[str] = field(default_factory=list)  # more host paths, read-only


# --- agent -----------------------------------------------------------------------------------
@dataclass
class AgentConf:
    _target_: str = MISSING


@dataclass
class OracleAgentConf(AgentConf):
    _target_: str = "evalrun.agents.oracle.OracleAgent"


@dataclass
class NoopAgentConf(AgentConf):
    _target_: str = "evalrun.agents.noop.NoopAgent"


# --- tracker ---------------------------------------------------------------------------------
@dataclass
class TrackerConf:
    _target_: str = MISSING


@dataclass
class LocalTrackerConf(TrackerConf):
    _target_: str = "evalrun.trackers.local.LocalTracker"


# --- profile (threshold gate) ------------------------------------------------------------------
@dataclass
class ProfileConf:
    _target_: str = "evalrun.gate.ThresholdProfile"
    name: str = "none"
    floors: dict[str, float] = field(default_factory=dict)
    ceilings: dict[str, float] = field(default_factory=dict)
    max_drop: dict[str, float] = field(default_factory=dict)  # vs baseline=<run-dir>


# --- top level -------------------------------------------------------------------------------
@dataclass
class TimeoutsConf:
    setup_s: float = 120.0
    agent_s: float = 600.0
    verify_s: float = 120.0


@dataclass
class EvalConfig:
    sandbox: SandboxConf = MISSING
    agent: AgentConf = MISSING
    tracker: TrackerConf = MISSING
    profile: ProfileConf = MISSING
    name: str = "eval"
    tasks_dir: str | None = None  # None: the bundled benchmark
    run_dir: str = "runs/${now:%Y%m%d-%H%M%S}-${name}"
    trials: int = 1
    # Selection: a string or a list each (`tags=python`, `tags=[python,git]`).
    tags: Any = field(default_factory=list)
    difficulty: Any = None
    ids: Any = None
    limit: int | None = None
    concurrency: int = 4
    max_retries: int = 2
    timeouts: TimeoutsConf = field(default_factory=TimeoutsConf)
    keep_workspaces: bool = False
    dry_run: bool = False
    baseline: str | None = None  # a finished run dir: profile max_drop bounds compare to it


def register_configs() -> None:
    """Put every schema in the ConfigStore (idempotent; called before composing)."""
    cs = ConfigStore.instance()
    cs.store(name="evalrun_schema", node=EvalConfig)
    for group, name, node in (
        ("sandbox", "local_schema", LocalSandboxConf),
        ("sandbox", "bwrap_schema", BwrapSandboxConf),
        ("agent", "oracle_schema", OracleAgentConf),
        ("agent", "noop_schema", NoopAgentConf),
        ("tracker", "local_schema", LocalTrackerConf),
        ("profile", "profile_schema", ProfileConf),
    ):
        cs.store(group=group, name=name, node=node)
