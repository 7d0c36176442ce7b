"""The online config (conf/online.yaml, schema `evalrun.config.schema.OnlineConfig`) checked and
typed.

Every check here runs before Opik is contacted or a judge is called; a bad value is a
`UsageError` naming the key and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalrun.config.pricing import Price, resolve_price
from evalrun.errors import UsageError, bad_value
from evalrun.integrations.opik.criteria import Criterion, load_config
from evalrun.integrations.opik.geval import GEvalJudge
from evalrun.integrations.opik.link import OpikDestination
from evalrun.run.judges import build_judge

LEVELS = ("threads", "traces")


@dataclass(frozen=True)
class OnlineSettings:
    project: str
    level: str
    since: str | None  # ISO 8601, UTC, as Opik's filters take it
    limit: int
    sample_rate: float
    seed: int
    budget_usd: float | None
    pass_threshold: float
    workers: int
    max_scan: int
    max_turns: int
    judge_attempts: int
    retry_backoff_s: float
    input_key: str | None
    output_key: str | None
    run_dir: Path


def parse_since(value: Any) -> str | None:
    """`2026-11-01` or any ISO 8601 date-time -> `2026-11-01T00:00:00Z` (naive means UTC)."""
    if value in (None, ""):
        return None
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise bad_value(
            "since", "an ISO 8601 date or date-time such as 2026-11-01", value
        ) from None
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _positive(name: str, value: Any) -> int:
    if not isinstance(value, int) or value < 1:
        raise bad_value(name, "a positive whole number", value)
    return value


def read_settings(cfg: Any, *, need_project: bool = True) -> OnlineSettings:
    if need_project and not cfg.project:
        raise UsageError("project: name the live Opik project to judge, e.g. project=support-bot")
    if cfg.level not in LEVELS:
        raise bad_value("level", f"one of {', '.join(LEVELS)}", cfg.level)
    if not 0.0 < cfg.sample_rate <= 1.0:
        raise bad_value("sample_rate", "a fraction in (0, 1]", cfg.sample_rate)
    if cfg.budget_usd is not None and cfg.budget_usd <= 0:
        raise bad_value("budget_usd", "a positive amount of USD", cfg.budget_usd)
    if not 0.0 <= cfg.pass_threshold <= 1.0:
        raise bad_value("pass_threshold", "a score in [0, 1]", cfg.pass_threshold)
    return OnlineSettings(
        project=str(cfg.project or ""),
        level=cfg.level,
        since=parse_since(cfg.since),
        limit=_positive("limit", cfg.limit),
        sample_rate=float(cfg.sample_rate),
        seed=int(cfg.seed),
        budget_usd=cfg.budget_usd,
        pass_threshold=float(cfg.pass_threshold),
        workers=_positive("workers", cfg.workers),
        max_scan=_positive("max_scan", cfg.max_scan),
        max_turns=_positive("max_turns", cfg.max_turns),
        judge_attempts=_positive("judge_attempts", cfg.judge_attempts),
        retry_backoff_s=float(cfg.retry_backoff_s),
        input_key=cfg.input_key or None,
        output_key=cfg.output_key or None,
        run_dir=Path(cfg.run_dir),
    )


def build_criteria(cfg: Any, *, preflight: bool = True) -> tuple[GEvalJudge, list[Criterion]]:
    """The judge from the `judge=` group (as offline) and one criterion per judge text, then one
    per built-in metric (`metrics:`)."""
    judge = build_judge(cfg.judge)
    if not isinstance(judge, GEvalJudge):
        raise UsageError(
            f"judge={judge.name}: online evaluation needs a judge model - pick one with "
            "judge=<option> (conf/judge/) or set EVAL_JUDGE_MODEL with judge=default"
        )
    specs, metrics = load_config(cfg.judges, cfg.metrics, cfg.judges_file)
    if preflight:
        try:
            judge.preflight()
        except UsageError as exc:  # judge=none is no way out here: online needs a judge
            raise UsageError(str(exc).replace(", or use judge=none", "")) from None
    model = judge.model or ""
    return judge, [
        *(Criterion(spec, model) for spec in specs),
        *(Criterion(None, model, metric=name) for name in metrics),
    ]


def judge_price(cfg: Any, model: str | None, budget_usd: float | None) -> Price | None:
    """What the judge's tokens cost: `judge_price` if set, else litellm's price for the model.
    A budget with no price is refused: it could not be kept."""
    given = cfg.judge_price
    override = None
    if given.input_usd_per_mtok is not None or given.output_usd_per_mtok is not None:
        if given.input_usd_per_mtok is None or given.output_usd_per_mtok is None:
            raise UsageError("judge_price: set both input_usd_per_mtok and output_usd_per_mtok")
        override = Price(given.input_usd_per_mtok, given.output_usd_per_mtok, source="judge_price")
    price, note = resolve_price(model or "", override=override)
    if price is None and budget_usd is not None:
        raise UsageError(
            f"budget_usd={budget_usd:g} needs the judge's price, and there is none ({note}); "
            "set judge_price.input_usd_per_mtok and judge_price.output_usd_per_mtok"
        )
    return price


def destination(tracker: Any, project: str) -> OpikDestination:
    """Where Opik is, and the project evaluation traces go to - never the live `project`."""
    if tracker is None or not str(tracker.get("_target_", "")).endswith("OpikTracker"):
        raise UsageError("tracker: online evaluation talks to Opik; use tracker=opik")
    dest = OpikDestination.of(tracker)
    if project and dest.project == project:
        raise UsageError(
            f"tracker.project={dest.project!r} is the project being judged: evaluation traces "
            "would land in the live project. Set EVAL_PROJECT_NAME (or tracker.project) to "
            "another project."
        )
    return dest
