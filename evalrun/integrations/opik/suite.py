"""Probe `assertions:` as an Opik Test Suite, beside the deterministic expectations.

With `tracker=opik`, a probes run whose probes carry natural-language assertions ends by
getting or creating the test suite `evalrun-probe-assertions-<experiment name>` (one per run, so
a run is judged on its own samples only; a resumed run finds its suite again and the SDK skips
items already there), inserting one item per sample - its probe, trial and final answer, with
the probe's assertions - and calling `opik.run_tests`, whose task hands back the recorded answer:
nothing is re-run, Opik's LLM judge only reads what the agent said.

The per-probe Opik pass rate (items that passed / items) is handed to the probes report
(`evalrun.report.probes.write_assertion_results`: `<run_dir>/probes_opik.json`) and shown beside
the expectation pass rates. An assertion the judge could not score counts as failed, as Opik
counts it.

The judge model is the run's `judge=` option (its model, base URL and key); `judge=none` means
no suite. opik and litellm are imported only here, when a suite runs. Exercised against local
stand-ins of Opik's REST API and of an OpenAI-compatible model (`tests/opik_standin.py`,
`tests/openai_standin.py`), not a real Opik server or model.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from evalrun.config.providers import NO_KEY
from evalrun.integrations.opik.geval import GEvalJudge
from evalrun.models.records import Outcome, SampleRecord

SUITE_PREFIX = "evalrun-probe-assertions"


@dataclass(frozen=True)
class JudgeRoute:
    """Where the suite's LLM judge is sent (LiteLLM model string, base URL, key)."""

    model: str
    api_base: str | None = None
    api_key: str | None = None

    @classmethod
    def of(cls, judge: object) -> JudgeRoute | None:
        """The route of a `GEvalJudge`; None for `judge=none` or a judge without a model."""
        if not isinstance(judge, GEvalJudge) or not judge.model:
            return None
        base_url, key_env = judge.base_url, judge.api_key_env
        key = os.environ.get(key_env, "") if key_env else (NO_KEY if base_url else None)
        return cls(model=judge.model, api_base=base_url, api_key=key)


def suite_items(
    records: list[SampleRecord], assertions: dict[str, tuple[str, ...]]
) -> list[dict[str, Any]]:
    """One test-suite item per finished sample of a probe with assertions (errors left out)."""
    return [
        {
            "data": {"probe": r.task_id, "trial": r.trial, "answer": r.agent.output},
            "assertions": list(assertions[r.task_id]),
        }
        for r in sorted(records, key=lambda r: (r.task_id, r.trial))
        if r.task_id in assertions and r.outcome is not Outcome.error
    ]


def _recorded_answer(item: dict[str, Any]) -> str:
    return str(item.get("answer", ""))


def run_suite(
    client: Any, project: str, experiment: str, items: list[dict[str, Any]], route: JudgeRoute
) -> dict[str, Any]:
    """Get or create the run's suite, insert `items`, run it; the per-probe pass rates."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download
    import litellm
    import opik

    name = f"{SUITE_PREFIX}-{experiment}"
    suite = client.get_or_create_test_suite(
        name,
        description="evalrun probe assertions: one item per sample's final answer",
        project_name=project,
    )
    suite.insert(items)
    # run_tests takes only a model name: the route goes through LiteLLM's module settings for
    # the length of the call (no judging runs concurrently: every sample is finished here).
    saved = (litellm.api_base, litellm.api_key, litellm.drop_params)
    litellm.api_base, litellm.api_key = route.api_base, route.api_key
    litellm.drop_params = True  # Opik's judge asks for reasoning_effort, which many models refuse
    try:
        result = opik.run_tests(
            suite,
            task=_recorded_answer,  # type: ignore[arg-type]  # any output is kept; stubs say dict
            model=route.model,
            experiment_name=name,
            verbose=0,
            generate_report=False,
            worker_threads=2,
        )
    finally:
        litellm.api_base, litellm.api_key, litellm.drop_params = saved
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for item in result.item_results.values():
        content = item.test_results[0].test_case.dataset_item_content if item.test_results else {}
        probe = str(content.get("probe", "?"))
        tally[probe][0] += bool(item.passed)
        tally[probe][1] += 1
    return {
        "suite": name,
        "experiment": result.experiment_name,
        "judge": route.model,
        "probes": {
            p: {"passed": c, "samples": n, "rate": c / n} for p, (c, n) in sorted(tally.items())
        },
    }
