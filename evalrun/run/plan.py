"""From a composed config to a frozen, fully resolved RunPlan - before anything runs.

The plan holds the selected tasks (each with its fingerprint), the cells (task x trial), the
redacted resolved config, the limits, and the instantiated components. Nothing after planning
reads the raw config. A bad selection or a bad component is a `UsageError` here.

A task folder that cannot load, or a task the sandbox cannot host, does not stop the run: it is
a `SkippedEntry` (reported now, kept in plan.json and listed again when the run ends), unless it
was named in `ids=` - then it is a `UsageError`. What the loaders want said (keys a foreign
format's runner ignores) is printed once, here.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from evalrun.agents.base import Agent, RunScope
from evalrun.analysis.gate import ThresholdProfile
from evalrun.bundled import PROBES_DIR, TASKS_DIR
from evalrun.config.schema import EvalConfig, SuiteKind, TasksRefConf, resolved_dict
from evalrun.console import make_console, styled
from evalrun.errors import UsageError, bad_value
from evalrun.models.records import CellKey, SampleRecord, SkipKind, SkippedEntry
from evalrun.run.engine import Batch
from evalrun.run.final_workspace import KeepCaps, WorkspaceKeeper
from evalrun.run.judges import Judge, NoJudge, build_judge
from evalrun.run.trial import Limits
from evalrun.rundir.dirs import is_dir_template
from evalrun.rundir.provenance import reproduction_info
from evalrun.rundir.readers import profile_for
from evalrun.rundir.redact import SecretValues, redact
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks.base import Difficulty, setup_bytes
from evalrun.tasks.loader import Suite, Task, runnable_on, scan_suite, unenforced_limits

if TYPE_CHECKING:
    from evalrun.models.plan import PlanFile, PlannedTask, TasksSource
    from evalrun.models.summary import Summary
    from evalrun.tasks.remote import Resolved


# --- trackers: sinks for a run's records beside the local store (`tracker=<name>`) -----------
# A tracker failing must never lose a run: the local store has it all. `tracker=opik` lives in
# `evalrun.integrations.opik.tracker`.
class Tracker(Protocol):
    name: str

    def start(self, plan: RunPlan) -> None: ...

    def record(self, record: SampleRecord) -> None: ...

    def finish(self, summary: Summary) -> None: ...


class LocalTracker:
    """`tracker=local`: nothing beyond the run directory, which every run writes anyway."""

    name = "local"

    def start(self, plan: RunPlan) -> None:
        return None

    def record(self, record: SampleRecord) -> None:
        return None

    def finish(self, summary: Summary) -> None:
        return None


@dataclass(frozen=True)
class RunPlan:
    run_id: str
    run_dir: Path
    tasks_dir: Path
    config: dict[str, Any]  # resolved and redacted
    tasks: tuple[Task, ...]
    trials: int
    concurrency: int
    limits: Limits
    dry_run: bool
    backend: SandboxBackend = field(repr=False)
    agent: Agent = field(repr=False)
    tracker: Tracker = field(repr=False)
    profile: ThresholdProfile = field(repr=False)
    suite: SuiteKind
    judge: Judge = field(repr=False, default_factory=NoJudge)
    max_errors: int = 0  # more harness errors than this: the run exits ExitCode.TOO_MANY_ERRORS
    skipped: tuple[SkippedEntry, ...] = ()
    warnings: tuple[str, ...] = ()
    secrets: SecretValues = field(repr=False, default_factory=SecretValues)
    new_dir: bool = False  # run_dir is a template (`runs/${now:...}-eval`): claim a fresh one
    keep_caps: KeepCaps | None = None  # final workspaces kept within these (None: not kept)
    tasks_source: TasksSource | None = None  # a suite given by reference, as resolved

    @property
    def unloadable(self) -> list[SkippedEntry]:
        return [s for s in self.skipped if s.kind == SkipKind.cannot_load]

    @property
    def cells(self) -> list[tuple[Task, int]]:
        return [(task, trial) for task in self.tasks for trial in range(self.trials)]

    def cell_keys(self) -> set[CellKey]:
        return {CellKey.of(t, i) for t, i in self.cells}

    @property
    def batch(self) -> Batch:
        """What each of the run's samples runs with (`evalrun.run.engine.execute`)."""
        keeper = None if self.keep_caps is None else WorkspaceKeeper(self.run_dir, self.keep_caps)
        return Batch(
            self.agent,
            self.backend,
            self.limits,
            self.run_id,
            self.concurrency,
            self.judge,
            keeper,
        )

    def to_plan_file(self) -> PlanFile:
        """plan.json (`evalrun.rundir.log.PlanFile`), written before the first sample."""
        from evalrun.models.plan import PlanFile, RunKind
        from evalrun.rundir.log import PLAN_SCHEMA

        return PlanFile(
            schema_version=PLAN_SCHEMA,
            kind=RunKind(self.suite),
            run_id=self.run_id,
            run_dir=str(self.run_dir),
            tasks_dir=str(self.tasks_dir),
            trials=self.trials,
            concurrency=self.concurrency,
            sandbox=self.backend.name,
            agent=self.agent.name,
            choices=group_choices(),
            tasks=[planned_task(t) for t in self.tasks],
            cells=len(self.cells),
            # install kind, git shas, versions, and the suite's reference as resolved
            provenance=reproduction_info(self.tasks_dir, self.tasks_source),
            skipped=list(self.skipped),
        )


def planned_task(task: Task) -> PlannedTask:
    """A task as plan.json lists it: id, fingerprint, difficulty, tags, format, prompt and the
    fields of its file evalrun keeps but does not use."""
    from evalrun.models.plan import PlannedTask

    return PlannedTask(
        id=task.id,
        fingerprint=task.fingerprint,
        difficulty=task.spec.difficulty.value,
        tags=list(task.spec.tags),
        format=task.format.name,
        prompt=task.spec.prompt,
        fields=kept_fields(task) if task.format.kept_fields else {},
    )


def group_choices() -> dict[str, str]:
    """The config group options of the run being composed (`agent: oracle`, ...); empty when
    the config was composed without Hydra's app (the compose API)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return {}
    chosen = HydraConfig.get().runtime.choices
    return {k: str(v) for k, v in chosen.items() if v is not None and not k.startswith("hydra/")}


def kept_fields(task: Task) -> dict[str, Any]:
    """What the task's file says that evalrun does not use, secrets masked, as JSON values."""
    return json.loads(json.dumps(redact(dict(task.format.kept_fields)), default=str))


def as_list(value: Any, knob: str) -> list[str]:
    """`tags=python` and `tags=[python,git]` both mean a list."""
    if value is None:
        return []
    if isinstance(value, str | int):
        return [str(value)]
    if isinstance(value, Sequence):
        return [str(v) for v in value]
    raise bad_value(knob, "a name or a list of names", value)


def select(
    tasks: list[Task],
    *,
    tags: list[str],
    difficulty: list[str],
    ids: list[str],
    limit: int | None,
) -> list[Task]:
    """Apply the slice: ids (exact), tags (any of), difficulty (any of), then the first `limit`."""
    known = {t.id for t in tasks}
    for task_id in ids:
        if task_id not in known:
            close = difflib.get_close_matches(task_id, sorted(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise UsageError(f"ids: unknown task id {task_id!r}{hint}")
    valid = {d.value for d in Difficulty}
    for level in difficulty:
        if level not in valid:
            guess = difflib.get_close_matches(level, sorted(valid), n=1)
            hint = f"; did you mean {guess[0]}?" if guess else ""
            raise UsageError(
                f"difficulty: {level!r} is not one of {', '.join(sorted(valid))}{hint}"
            )
    chosen = [
        t
        for t in tasks
        if (not ids or t.id in ids)
        and (not tags or set(tags) & set(t.spec.tags))
        and (not difficulty or t.spec.difficulty.value in difficulty)
    ]
    if limit is not None:
        if limit < 1:
            raise bad_value("limit", "a positive number", limit)
        chosen = chosen[:limit]
    if not chosen:
        raise nothing_selected(tasks, tags, difficulty, ids)
    return chosen


def nothing_selected(
    tasks: list[Task], tags: list[str], difficulty: list[str], ids: list[str]
) -> UsageError:
    """Why the slice is empty, naming the tags (difficulties) the suite does have."""
    have_tags = sorted({tag for t in tasks for tag in t.spec.tags})
    have_levels = sorted({t.spec.difficulty.value for t in tasks})
    missing = [tag for tag in tags if tag not in have_tags]
    if tags and len(missing) == len(tags):
        guesses = [g[0] for tag in missing if (g := difflib.get_close_matches(tag, have_tags, 1))]
        return UsageError(
            f"tags: no task has the tag{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
            + (f" (did you mean {', '.join(guesses)}?)" if guesses else ""),
            hint=f"tags in this suite: {', '.join(have_tags) or '(none)'}",
        )
    if difficulty and not set(difficulty) & set(have_levels):
        return UsageError(
            f"difficulty: no task is {' or '.join(difficulty)}",
            hint=f"difficulties in this suite: {', '.join(have_levels)}",
        )
    asked = " ".join(
        f"{knob}=[{','.join(values)}]" if len(values) > 1 else f"{knob}={values[0]}"
        for knob, values in (("tags", tags), ("difficulty", difficulty), ("ids", ids))
        if values
    )
    return UsageError(
        f"no task matches {asked} together",
        hint=f"tags: {', '.join(have_tags) or '(none)'}; difficulties: {', '.join(have_levels)}",
    )


def resolve_tasks_dir(value: str | None, tasks_ref: TasksRefConf | None = None) -> Resolved:
    """The folder `tasks_dir` names - the bundled benchmark when unset, a git reference or a
    registry dataset checked out into the cache (`evalrun.tasks.remote`) - with what the
    resolution wants said printed on stderr."""
    from evalrun.tasks.remote import Resolved, resolve  # here: a run of a folder never pays

    if value in (None, ""):
        return Resolved(TASKS_DIR)
    resolved = resolve(str(value), tasks_ref or TasksRefConf())
    for note in resolved.notes:
        make_console(stderr=True, soft_wrap=True).print(styled("[yellow]note:[/]"), note)
    return resolved


def local_tasks_dir(value: str | None, command: str) -> Path:
    """The folder `tasks_dir` names on disk (unset: the bundled benchmark); a `UsageError` for
    a reference, whose cached checkout `command` must not write into."""
    from evalrun.tasks.remote.reference import parse

    if value and parse(value) is not None:
        raise UsageError(
            f"tasks_dir: {command} needs a folder of your own, not the reference {value!r} "
            "(its checkout is a shared, verified cache)"
        )
    return resolve_tasks_dir(value).folder


def load_for_suite(
    suite: SuiteKind,
    tasks_dir: str | None,
    reward_threshold: float,
    strict: bool = False,
    verifier_hardening: bool = EvalConfig.verifier_hardening,
    tasks_ref: TasksRefConf | None = None,
) -> Suite:
    """`suite=tasks`: task folders (default: the bundled benchmark); `suite=probes`: behaviour
    probe folders (default: the bundled probes/). `tasks_dir` points either at another folder,
    or names one by reference (`tasks_ref` says how those resolve)."""
    if suite is SuiteKind.probes:
        from evalrun.probes.format import load_probes

        if not tasks_dir:
            return Suite(PROBES_DIR, load_probes(PROBES_DIR))
        resolved = resolve_tasks_dir(tasks_dir, tasks_ref)
        return Suite(resolved.folder, load_probes(resolved.folder), source=resolved.source)
    resolved = resolve_tasks_dir(tasks_dir, tasks_ref)
    loaded = scan_suite(
        resolved.folder,
        reward_threshold=reward_threshold,
        strict=strict,
        verifier_hardening=verifier_hardening,
    )
    return replace(loaded, source=resolved.source)


def refuse_unloadable(suite: Suite, ids: list[str]) -> list[SkippedEntry]:
    """The suite's broken folders as skipped tasks - with `ids`, only those it names, so a
    folder the filter leaves out never fails the run; a `UsageError` when one named in `ids`
    is broken or when nothing at all could load."""
    broken = {u.task_id: u for u in suite.unloadable}
    named = [broken[i].describe() for i in ids if i in broken]
    if named:
        raise UsageError(
            "ids: cannot load what was asked for:\n" + "\n".join(f"  {n}" for n in named)
        )
    if broken and not suite.tasks:
        lines = "\n".join(f"  {u.describe()}" for u in suite.unloadable)
        raise UsageError(f"no task in {suite.tasks_dir} could be loaded:\n{lines}")
    return [
        SkippedEntry(id=u.task_id, kind=SkipKind.cannot_load, reason=u.describe())
        for u in suite.unloadable
        if not ids
    ]


def agent_for_suite(suite: SuiteKind, agent: Agent) -> Agent:
    """Probes are graded on what the agent did: record its steps and the workspace around them."""
    if suite is not SuiteKind.probes:
        return agent
    from evalrun.probes.evidence import RecordingAgent

    return RecordingAgent(agent)


def instantiate_group(node: DictConfig, group: str, **kwargs: Any) -> Any:
    try:
        return instantiate(node, **kwargs)
    except InstantiationException as exc:
        if isinstance(exc.__cause__, UsageError):  # the component's own message, as it said it
            raise exc.__cause__ from None
        raise UsageError(f"{group}: could not build {node.get('_target_')}: {exc}") from exc


def check_numbers(cfg: DictConfig) -> None:
    """Counts, timeouts and backoff in range, or a `UsageError` naming the key (the schema
    only checks their types)."""
    if cfg.trials < 1:
        raise bad_value("trials", "a positive number", cfg.trials)
    if cfg.concurrency < 1:
        raise bad_value("concurrency", "a positive number", cfg.concurrency)
    if cfg.max_errors < 0:
        raise bad_value("max_errors", "0 or more", cfg.max_errors)
    if cfg.max_retries < 0:
        raise bad_value("max_retries", "0 or more", cfg.max_retries)
    if cfg.retry_backoff_s < 0:
        raise bad_value("retry_backoff_s", "0 or more seconds", cfg.retry_backoff_s)
    for phase in ("setup_s", "agent_s", "verify_s"):
        seconds = cfg.timeouts[phase]
        if seconds <= 0:
            raise bad_value(f"timeouts.{phase}", "a positive number of seconds", seconds)


def build(cfg: DictConfig) -> RunPlan:
    """Resolve `cfg` (an `EvalConfig`) into a RunPlan; raises `UsageError` on a bad config."""
    try:
        resolved = resolved_dict(cfg)
    except OmegaConfBaseException as exc:  # e.g. an unresolvable ${...} in an override
        from evalrun.config.usage import from_hydra

        raise from_hydra(exc) from exc
    check_numbers(cfg)
    suite = load_for_suite(
        cfg.suite,
        cfg.tasks_dir,
        cfg.reward_threshold,
        cfg.strict_formats,
        cfg.verifier_hardening,
        cfg.tasks_ref,
    )
    ids = as_list(cfg.ids, "ids")
    skipped = refuse_unloadable(suite, ids)
    backend = instantiate_group(cfg.sandbox, "sandbox", keep_workspaces=cfg.keep_workspaces)
    chosen = select(
        suite.tasks,
        tags=as_list(cfg.tags, "tags"),
        difficulty=as_list(cfg.difficulty, "difficulty"),
        ids=ids,
        limit=None,
    )
    # A task the backend cannot host (e.g. one needing its own image off docker) is skipped
    # with its reason, or refused when named in ids; the limit applies to what can run.
    tasks, unrunnable = runnable_on(chosen, backend, explicit=bool(ids))
    skipped += [
        SkippedEntry(id=task_id, kind=SkipKind.cannot_run, reason=reason)
        for task_id, reason in unrunnable
    ]
    if cfg.limit is not None:
        tasks = select(tasks, tags=[], difficulty=[], ids=[], limit=cfg.limit)
    refuse_large_setups(tasks, cfg.setup_max_mb)
    say_loading(suite.warnings, skipped)
    run_dir = Path(cfg.run_dir)
    secrets = SecretValues.collect(resolved)
    plan = RunPlan(
        run_id=run_dir.name,
        run_dir=run_dir,
        tasks_dir=suite.tasks_dir,
        tasks_source=suite.source,
        config=redact(resolved, secrets),
        tasks=tuple(tasks),
        trials=cfg.trials,
        concurrency=cfg.concurrency,
        limits=Limits(
            setup_s=cfg.timeouts.setup_s,
            agent_s=cfg.timeouts.agent_s,
            verify_s=cfg.timeouts.verify_s,
            max_retries=cfg.max_retries,
            retry_backoff_s=cfg.retry_backoff_s,
        ),
        dry_run=cfg.dry_run,
        backend=backend,
        agent=agent_for_suite(cfg.suite, instantiate_group(cfg.agent, "agent")),
        tracker=instantiate_group(cfg.tracker, "tracker"),
        profile=profile_for(cfg.profile, cfg.baseline),
        judge=build_judge(cfg.judge),
        suite=cfg.suite,
        skipped=tuple(skipped),
        warnings=tuple(suite.warnings),
        max_errors=cfg.max_errors,
        secrets=secrets,
        new_dir=is_dir_template(cfg, "run_dir"),
        # probes are graded on the agent's steps, never regraded: nothing to keep for them
        keep_caps=KeepCaps.of(cfg.final_workspaces) if cfg.suite is SuiteKind.tasks else None,
    )
    warn_if_not_isolated(plan.backend, plan.agent)
    warn_unenforced(plan.backend, plan.tasks)
    return plan


def say_skipped(skipped: Sequence[SkippedEntry], console: Console) -> None:
    """The tasks that did not run and why (the end of a run lists them again)."""
    if skipped:
        console.print(styled("[yellow]{} tasks of the suite did not run:[/]", len(skipped)))
    for task in skipped:
        console.print(f"  {task.id} ({task.kind}): {task.reason}")


def say_loading(warnings: list[str], skipped: list[SkippedEntry]) -> None:
    """On stderr, once per run: the loaders' warnings, then every task that will not run."""
    if not warnings and not skipped:
        return
    console = make_console(stderr=True, soft_wrap=True)
    if warnings:
        console.print(
            styled(
                "[yellow]warning:[/] {} task file keys that their format's runner ignores "
                "(kept, not used; strict_formats=true makes them errors):",
                len(warnings),
            )
        )
        for line in grouped_warnings(warnings):
            console.print(f"  {line}")
    for task in skipped:
        console.print(styled("[yellow]skipped[/] {} ({}):", task.id, task.kind), task.reason)


def grouped_warnings(warnings: Sequence[str], shown: int = 3) -> list[str]:
    """`<file>: <what>` warnings, one line per `<what>` with the files that say it (a key a
    whole suite repeats is one line, not one per task); other warnings as they are."""
    files: dict[str, list[str]] = {}
    for warning in warnings:
        path, sep, what = warning.partition(": unknown ")
        key = f"unknown {what}" if sep else warning
        files.setdefault(key, []).extend([path] if sep else [])
    lines = []
    for what, paths in files.items():
        if len(paths) <= 1:
            lines.append(f"{paths[0]}: {what}" if paths else what)
            continue
        more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
        lines.append(f"{what}: in {len(paths)} files ({', '.join(paths[:shown])}{more})")
    return lines


def without_unhostable(plan: RunPlan, scope: RunScope) -> RunPlan:
    """The plan without the tasks the prepared agent cannot run (`RunScope.cannot_host`: e.g. a
    prebuilt image with no python3 for an agent preset's gateway forwarder; `mcp_refusal`: a
    task with MCP servers for an agent that cannot use them), each skipped with its reason
    before any sample starts; a plan with nothing left is refused."""
    kept: list[Task] = []
    skipped: list[SkippedEntry] = []
    for task in plan.tasks:
        spec = task.format.sandbox_spec
        reason = None if spec.is_default else scope.cannot_host(spec)
        if reason is None and scope.mcp_refusal and task.spec.mcp_servers:
            names = ", ".join(s.name for s in task.spec.mcp_servers)
            reason = f"needs MCP servers ({names}): {scope.mcp_refusal}"
        if reason is None:
            kept.append(task)
        else:
            skipped.append(SkippedEntry(id=task.id, kind=SkipKind.cannot_run, reason=reason))
    if not skipped:
        return plan
    if not kept:
        lines = "\n".join(f"  {task.id}: {task.reason}" for task in skipped)
        raise UsageError(f"agent={plan.agent.name} can run none of the selected tasks:\n{lines}")
    say_loading([], skipped)
    return replace(plan, tasks=tuple(kept), skipped=(*plan.skipped, *skipped))


def with_run_dir(plan: RunPlan, run_dir: Path) -> RunPlan:
    """The same plan, writing into `run_dir` (a freshly claimed directory)."""
    return replace(plan, run_dir=run_dir, run_id=run_dir.name, new_dir=False)


def refuse_large_setups(tasks: Sequence[Task], cap_mb: int | None) -> None:
    """A `UsageError` naming every task whose setup is larger than `setup_max_mb` (None: no cap).

    Every sample copies its task's setup into a fresh sandbox; a cap keeps a stray dataset or
    core dump in a task folder from filling one sandbox after another.
    """
    if cap_mb is None:
        return
    if cap_mb < 1:
        raise bad_value("setup_max_mb", "a positive number or null", cap_mb)
    mib = 1024 * 1024
    sizes = [(t, setup_bytes(t.format.setup_dirs())) for t in tasks]
    over = [(t, size) for t, size in sizes if size > cap_mb * mib]
    if over:
        lines = "\n".join(f"  {t.id}: its setup holds {size / mib:.0f} MiB" for t, size in over)
        raise UsageError(
            f"setup_max_mb={cap_mb}: these tasks copy more than that into every sandbox:\n"
            f"{lines}\nraise setup_max_mb (null: no cap) to run them, or shrink their setup"
        )


_warned_unenforced: set[str] = set()


def warn_unenforced(backend: SandboxBackend, tasks: Sequence[Task]) -> None:
    """Once per process and backend, on stderr: the tasks' own limits this backend cannot
    enforce (their samples get the backend's limits instead)."""
    lines = unenforced_limits(tasks, backend)
    if not lines or backend.name in _warned_unenforced:
        return
    _warned_unenforced.add(backend.name)
    console = make_console(stderr=True, soft_wrap=True)
    console.print(
        styled("[yellow]warning:[/]"),
        f"sandbox={backend.name} does not enforce these task limits; their samples get the "
        "sandbox's own limits, if any (for allowed_hosts: the sandbox's whole network, "
        "sandbox=docker enforces it):",
    )
    for line in lines:
        console.print(f"  {line}")


TRUSTED_AGENTS = frozenset({"oracle", "noop"})
_warned_not_isolated = False


def warn_if_not_isolated(backend: SandboxBackend, agent: Agent) -> None:
    """Once per process, on stderr: an agent we did not write runs with the whole host in reach."""
    global _warned_not_isolated
    if backend.isolated or agent.name in TRUSTED_AGENTS or _warned_not_isolated:
        return
    _warned_not_isolated = True
    make_console(stderr=True).print(
        styled("[yellow]warning:[/]"),
        f"sandbox={backend.name} isolates nothing: agent {agent.name!r} can "
        "read and write the whole host, including the tasks' hidden verify/ and solution/ "
        "folders and your home. Use sandbox=bwrap or sandbox=docker for agents you do not trust.",
    )
