"""Typed schemas for every config group, registered in Hydra's ConfigStore.

Each group option under `conf/<group>/<option>.yaml` starts from one of these schemas through its
defaults list, so a typo (`sandbox.imagee=...`) or a wrong type (`trials=many`) fails at compose
time with Hydra's message, before anything runs. `_target_` names the class Hydra instantiates:
Hydra's instantiate is the only registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from evalrun.bundled import CONF_DIR as CONF_DIR  # the packaged config tree (conf/ in git)


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
    _target_: str = "evalrun.sandbox.bwrap.backend.BwrapBackend"
    memory_mb: int | None = 8192  # all the sample's processes (cgroup, else each); null: none
    max_processes: int | None = 512  # RLIMIT_NPROC for the sample; null: no limit
    disk_mb: int | None = 4096  # what the sample writes (workspace, home, tmp); null: no limit
    extra_ro_paths: list[str] = field(default_factory=list)  # more host paths, read-only
    network: str = "none"  # none | host (share the host's network with tasks that need it)


@dataclass
class DockerSandboxConf(SandboxConf):
    _target_: str = "evalrun.sandbox.docker.backend.DockerBackend"
    image: str = "evalrun-base:bookworm"  # scripts/build-base-image.sh builds it offline
    network: str = "none"  # for tasks that do not ask: docker network_mode; none is safest
    public_network: str = "bridge"  # for tasks (and phases) that ask for the network
    offline: bool = False  # true: no network for any task or phase, whatever it asks
    build_network: str | None = None  # a task Dockerfile's RUN steps; null: the engine's default
    image_aliases: dict[str, str] = field(default_factory=dict)  # FROM name -> local image; "*"
    force_build: bool = False  # build a task's Dockerfile even when it names a prebuilt image
    memory: str | None = "2g"  # per container, swap included; null: no limit
    cpus: float | None = 1.0  # null: no limit
    pids_limit: int | None = 512  # null: no limit
    user: str = "1000:1000"  # uid[:gid] commands run as inside the container
    disk_mb: int | None = 4096  # what the sample writes (workspace, home, tmp); null: no limit


@dataclass
class ModalSandboxConf(SandboxConf):
    _target_: str = "evalrun.sandbox.modal.ModalBackend"
    image: str | None = None  # a registry tag; null: debian_slim + apt_packages
    python_version: str = "3.11"  # for the default debian_slim image
    apt_packages: list[str] = field(default_factory=lambda: ["git", "sqlite3"])
    app_name: str = "evalrun"  # Modal app the sandboxes belong to (created if missing)
    block_network: bool = True
    timeout_s: int = 3600  # lifetime of one sample's sandbox
    cpu: float | None = None
    memory_mb: int | None = None


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


@dataclass
class CoderAgentConf(AgentConf):
    _target_: str = "evalrun.agents.coder.agent.CoderAgent"
    provider: Any = "${provider}"  # the top-level provider group, instantiated with the agent
    max_retries: int = 4  # per model request: 429, 5xx, timeouts (exponential backoff)
    request_timeout_s: float = 180.0
    tool_retries: int = 3  # malformed tool arguments the model may retry
    bash_timeout_s: float = 120.0
    output_chars: int = 16_000  # cap on one tool result sent back to the model
    instructions: str | None = None  # None: evalrun.agents.coder.agent.INSTRUCTIONS
    model_settings: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, ...


@dataclass
class CommandAgentConf(AgentConf):
    _target_: str = "evalrun.agents.command.CommandAgent"
    cmd: str | None = None  # placeholders: {prompt_file} {trajectory_file} {usage_file} {workdir}
    env: dict[str, str] = field(default_factory=dict)  # plain values; never secrets
    pass_env: list[str] = field(default_factory=list)  # host variables passed in (API keys)
    timeout_s: float | None = None


@dataclass
class InstalledAgentConf(AgentConf):
    """An off-the-shelf agent CLI preset (conf/agent/claude_code.yaml, ...)."""

    _target_: str = MISSING  # evalrun.agents.presets.<name>.<Class>
    version: str = MISSING  # the CLI's version, pinned; installed into the host cache once
    provider: Any = "${provider}"  # where the gateway forwards; the key stays on the host
    budget: Any = "${budget}"
    model: str | None = None  # None: provider.model
    env: dict[str, str] = field(default_factory=dict)  # plain values; never secrets
    args: str = ""  # extra command-line arguments, as shell text
    timeout_s: float | None = None  # None: only the engine's timeouts.agent_s
    auto_install: bool = True  # install on first use; false: `evalrun agents install` first


@dataclass
class PythonAgentConf(AgentConf):
    _target_: str = "evalrun.agents.python.PythonAgent"
    factory: str | None = None  # "package.module:callable" returning an Agent
    kwargs: dict[str, Any] = field(default_factory=dict)


# --- provider (model endpoint for agents that call a model) ----------------------------------
@dataclass
class PriceConf:
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    cache_read_usd_per_mtok: float | None = None
    cache_write_usd_per_mtok: float | None = None


@dataclass
class ProviderConf:
    _target_: str = "evalrun.config.providers.Provider"
    name: str = MISSING
    model: str | None = None
    base_url: str | None = None
    api: str = "openai-compatible"  # openai | openai-compatible | gemini | openrouter
    api_key_env: str | None = None  # the variable's NAME; the key is read where it is used
    headers_env: dict[str, str] = field(default_factory=dict)  # header -> variable NAME
    price_prefixes: list[str] = field(default_factory=list)  # litellm cost-map key prefixes
    price: PriceConf = field(default_factory=PriceConf)  # overrides the litellm price


# --- tracker ---------------------------------------------------------------------------------
@dataclass
class TrackerConf:
    _target_: str = MISSING


@dataclass
class LocalTrackerConf(TrackerConf):
    _target_: str = "evalrun.run.plan.LocalTracker"


@dataclass
class OpikTrackerConf(TrackerConf):
    _target_: str = "evalrun.integrations.opik.tracker.OpikTracker"
    project: str = "evalrun"  # conf/tracker/opik.yaml: ${oc.env:EVAL_PROJECT_NAME,evalrun}
    dataset: str | None = None  # None: evalrun-<tasks dir name>-v1
    host: str | None = None  # None: the SDK's OPIK_URL_OVERRIDE / ~/.opik.config
    workspace: str | None = None  # None: the SDK's OPIK_WORKSPACE (the key: OPIK_API_KEY)
    flush_timeout_s: int = 60
    probe_timeout_s: float = 3.0


@dataclass
class OtelTrackerConf(TrackerConf):
    _target_: str = "evalrun.integrations.otel.tracker.OtelTracker"
    endpoint: str = "http://localhost:4318"  # OTLP over HTTP; spans go to <endpoint>/v1/traces
    service_name: str = "evalrun"
    headers_env: dict[str, str] = field(default_factory=dict)  # header -> variable NAME
    timeout_s: float = 10.0


# --- judge (LLM judges: Opik G-Eval through LiteLLM) ---------------------------------------------
@dataclass
class JudgeConf:
    _target_: str = MISSING
    name: str = MISSING


@dataclass
class NoJudgeConf(JudgeConf):
    _target_: str = "evalrun.run.judges.NoJudge"
    name: str = "none"


@dataclass
class GEvalJudgeConf(JudgeConf):
    _target_: str = "evalrun.integrations.opik.geval.GEvalJudge"
    model: str | None = None  # LiteLLM model string, e.g. openai/gpt-4o-mini; None: the provider's
    base_url: str | None = None
    api_key_env: str | None = None  # the variable's NAME; the key is read where it is used
    headers_env: dict[str, str] = field(default_factory=dict)  # header -> variable NAME
    vendor: str | None = None  # base_url/key/headers apply to models of this LiteLLM vendor only
    provider: Any = None  # judge=default: ${provider}
    max_retries: int = 1  # whole judgements retried on top of the SDK's 3 tries per call
    retry_backoff_s: float = 2.0
    timeout_s: float = 120.0
    temperature: float = 0.0


# --- profile (threshold gate) ------------------------------------------------------------------
@dataclass
class ProfileConf:
    _target_: str = "evalrun.analysis.gate.ThresholdProfile"
    name: str = "none"
    floors: dict[str, Any] = field(default_factory=dict)  # metric -> number or {value, on}
    ceilings: dict[str, Any] = field(default_factory=dict)
    max_drop: dict[str, Any] = field(default_factory=dict)  # vs baseline; {value, significant}


# --- budget (enforced by the model gateway, for agents that go through it) --------------------
@dataclass
class BudgetConf:
    requests: int | None = None  # model requests per sample
    tokens: int | None = None  # input + output tokens per sample
    usd: float | None = None  # USD per sample (evalrun's own pricing)
    run_usd: float | None = None  # USD for the whole run: at the cap no new sample starts


# --- top level -------------------------------------------------------------------------------
@dataclass
class TimeoutsConf:
    setup_s: float = 120.0
    agent_s: float = 600.0
    verify_s: float = 120.0


@dataclass
class FinalWorkspacesConf:
    """Each sample's workspace as the agent left it, kept compressed in the run directory so that
    `evalrun regrade` can grade it again with a verifier fixed later (docs/run-directory.md)."""

    keep: bool = True
    max_mb_per_sample: float = 20.0  # a larger archive is not kept (the record says why)
    max_mb_per_run: float = 1024.0  # once the run's archives add up to this, no more are kept


HARBOR_REGISTRY = "https://raw.githubusercontent.com/laude-institute/harbor/main/registry.json"


@dataclass
class TasksRefConf:
    """How `tasks_dir=` references are resolved (`evalrun.tasks.remote`)."""

    # Harbor's dataset registry (a JSON file): a path or an http(s) URL; `name@version` looks here
    registry: str = HARBOR_REGISTRY
    cache_dir: str | None = None  # None: $XDG_CACHE_HOME/evalrun/suites (else ~/.cache/...)


class SuiteKind(StrEnum):
    """What a run runs (`suite=`): task folders, or the behaviour probes (`evalrun.probes`)."""

    tasks = "tasks"
    probes = "probes"


@dataclass
class EvalConfig:
    sandbox: SandboxConf = MISSING
    agent: AgentConf = MISSING
    provider: ProviderConf = MISSING
    tracker: TrackerConf = MISSING
    judge: JudgeConf = MISSING
    profile: ProfileConf = MISSING
    name: str = "eval"
    tasks_dir: str | None = None  # None: the bundled benchmark; or git+<url>@<ref>#<sub>, name@ver
    tasks_ref: TasksRefConf = field(default_factory=TasksRefConf)
    suite: SuiteKind = SuiteKind.tasks  # probes: behaviour probes (default folder probes/)
    run_dir: str = "runs/${now:%Y%m%d-%H%M%S}-${name}"
    trials: int = 1
    # Selection: a string or a list each (`tags=python`, `tags=[python,git]`).
    tags: Any = field(default_factory=list)
    difficulty: Any = None
    ids: Any = None
    limit: int | None = None
    concurrency: int = 4
    max_retries: int = 2
    retry_backoff_s: float = 1.0  # wait before a sample's first retry; doubled after each
    # Harness errors (after retries) a run may end with and still exit 0; more: exit 3.
    max_errors: int = 0
    setup_max_mb: int | None = 1024  # a task's setup/ larger than this is refused; null: no cap
    reward_threshold: float = 1.0  # reward-based tasks (Harbor format) pass at reward >= this
    strict_formats: bool = False  # a key a foreign format's runner ignores: an error, not a warning
    # the harness hardens every verifier it runs (evalrun.verifier.hardening); false: as written,
    # for all
    verifier_hardening: bool = True
    timeouts: TimeoutsConf = field(default_factory=TimeoutsConf)
    budget: BudgetConf = field(default_factory=BudgetConf)
    keep_workspaces: bool = False
    final_workspaces: FinalWorkspacesConf = field(default_factory=FinalWorkspacesConf)
    dry_run: bool = False
    baseline: str | None = None  # a finished run dir: profile max_drop bounds compare to it


# --- evalrun online (conf/online.yaml): judge a live Opik project --------------------------------
@dataclass
class JudgePriceConf:
    input_usd_per_mtok: float | None = None  # both set: the judge's price (else litellm's)
    output_usd_per_mtok: float | None = None


@dataclass
class CriterionConf:
    name: str = MISSING
    task_introduction: str = MISSING
    evaluation_criteria: str = MISSING


@dataclass
class OnlineConfig:
    provider: ProviderConf = MISSING
    tracker: TrackerConf = MISSING  # tracker.project: where evaluation traces go
    judge: JudgeConf = MISSING
    profile: ProfileConf = MISSING
    project: str | None = None  # the live Opik project whose conversations are judged
    level: str = "threads"  # threads | traces
    since: str | None = None  # ISO date/time: only threads updated (traces started) since
    limit: int = 200  # at most this many threads judged per run
    sample_rate: float = 1.0  # seeded: the same threads are picked every time
    seed: int = 0
    budget_usd: float | None = None  # stop judging before the judge calls cost more
    judge_price: JudgePriceConf = field(default_factory=JudgePriceConf)
    pass_threshold: float = 0.5  # a thread passes when every judge scores at least this
    judges: list[CriterionConf] = field(default_factory=list)
    judges_file: str | None = None  # a YAML file with a judges: list (a task.yaml works)
    metrics: list[str] = field(default_factory=list)  # opik's built-in conversation metrics
    input_key: str | None = None  # dotted path to the user text in a trace's input
    output_key: str | None = None  # ... to the assistant text in a trace's output
    workers: int = 4
    max_scan: int = 10_000  # threads (traces) listed to choose from
    max_turns: int = 1_000  # traces read per thread
    judge_attempts: int = 2  # whole judgements tried per criterion and thread
    retry_backoff_s: float = 2.0
    rule_model: str | None = None  # Opik's name for the rule's model; None: judge.model
    rule_enabled: bool = True
    name: str = "online"
    run_dir: str = "runs/${now:%Y%m%d-%H%M%S}-${name}"
    baseline: str | None = None


def resolved_dict(cfg: Any) -> dict[str, Any]:
    """The composed config as plain data, every interpolation resolved (what a run records)."""
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert isinstance(data, dict)
    return {str(key): value for key, value in data.items()}


def register_configs() -> None:
    """Put every schema in the ConfigStore (idempotent; called before composing)."""
    cs = ConfigStore.instance()
    cs.store(name="evalrun_schema", node=EvalConfig)
    cs.store(name="online_schema", node=OnlineConfig)
    for group, name, node in (
        ("sandbox", "local_schema", LocalSandboxConf),
        ("sandbox", "bwrap_schema", BwrapSandboxConf),
        ("sandbox", "docker_schema", DockerSandboxConf),
        ("sandbox", "modal_schema", ModalSandboxConf),
        ("agent", "oracle_schema", OracleAgentConf),
        ("agent", "noop_schema", NoopAgentConf),
        ("agent", "coder_schema", CoderAgentConf),
        ("agent", "command_schema", CommandAgentConf),
        ("agent", "python_schema", PythonAgentConf),
        ("agent", "installed_schema", InstalledAgentConf),
        ("provider", "provider_schema", ProviderConf),
        ("tracker", "local_schema", LocalTrackerConf),
        ("tracker", "opik_schema", OpikTrackerConf),
        ("tracker", "otel_schema", OtelTrackerConf),
        ("judge", "none_schema", NoJudgeConf),
        ("judge", "geval_schema", GEvalJudgeConf),
        ("profile", "profile_schema", ProfileConf),
    ):
        cs.store(group=group, name=name, node=node)
