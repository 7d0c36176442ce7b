"""Probe `assertions:` run as an Opik test suite with tracker=opik, beside the expectations.

No Opik server or model is reachable here: the real opik SDK talks to `tests/opik_standin.py`
(a local stand-in for Opik's REST API) and its LLM judge, through LiteLLM, to
`tests/openai_standin.py` (a local OpenAI-compatible stand-in).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from rich.console import Console

from evalrun.cli.hydra import compose_config
from evalrun.run.runner import run
from tests.conftest import REPO
from tests.integrations.opik import test_tracker as test_opik
from tests.openai_standin import Standin, answer

dead_url = test_opik.dead_url
opik_env, standin = test_opik.opik_env, test_opik.standin  # the same fixtures as test_opik's

BUNDLED = REPO / "probes"
WITH_ASSERTIONS = ("p09-answer-without-modifying", "p10-json-output-contract")


def probes_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "probes"
    for probe in WITH_ASSERTIONS:
        shutil.copytree(BUNDLED / probe, suite / probe)
    return suite


def evaluate(suite: Path, run_dir: Path, judge_url: str) -> tuple[int, str]:
    cfg = compose_config(
        [
            "suite=probes",
            f"tasks_dir={suite}",
            f"run_dir={run_dir}",
            "agent=oracle",
            "trials=2",
            "tracker=opik",
            "judge=default",
            f"provider.base_url={judge_url}",
            "provider.model=standin-model",
            "provider.api_key_env=JUDGE_TEST_KEY",
        ]
    )
    out = io.StringIO()
    return run(cfg, Console(file=out, width=200)), out.getvalue()


def verdict(*scores: bool) -> str:
    """The judge's structured reply: one {score, reason, confidence} per assertion key."""
    return json.dumps(
        {
            f"assertion_{i}": {"score": s, "reason": "stand-in", "confidence": 0.9}
            for i, s in enumerate(scores, 1)
        }
    )


def test_probe_assertions_run_as_an_opik_test_suite(tmp_path, standin, opik_env, capsys):
    opik_env.setenv("JUDGE_TEST_KEY", "judge-key")
    # p09 has two assertions and the second is judged false; p10 has one, judged true
    # (a reply's extra key is ignored for a one-assertion item).
    with Standin([answer(verdict(True, False), forever=True)]) as judge_llm:
        code, out = evaluate(probes_suite(tmp_path), tmp_path / "run", judge_llm.base_url)
    assert code == 0  # the deterministic expectations all pass on the oracle's good runs
    suites = [
        d for d in standin.datasets.values() if d["name"].startswith("evalrun-probe-assertions-")
    ]
    assert len(suites) == 1, standin.datasets
    items = standin.items_of(suites[0]["name"])
    got = sorted((i["data"]["probe"], i["data"]["trial"]) for i in items)
    assert got == sorted((p, t) for p in WITH_ASSERTIONS for t in (0, 1))
    p10 = next(i for i in items if i["data"]["probe"] == WITH_ASSERTIONS[1])
    assert p10["data"]["answer"].startswith('[{"file": "orders.py"')  # the recorded answer
    prompts = " ".join(json.dumps(r.body) for r in judge_llm.requests)
    assert "The answer is only JSON" in prompts and "3 test methods" in prompts
    assert standin.assertion_results and not standin.unhandled
    rates = json.loads((tmp_path / "run" / "probes.json").read_text())
    assert rates[WITH_ASSERTIONS[0]]["opik:assertions"] == {"passed": 0, "samples": 2, "rate": 0.0}
    assert rates[WITH_ASSERTIONS[1]]["opik:assertions"] == {"passed": 2, "samples": 2, "rate": 1.0}
    assert rates[WITH_ASSERTIONS[0]]["right_number"]["rate"] == 1.0  # side by side
    assert "opik:assertions" in out
    assert "opik: test suite evalrun-probe-assertions-run" in capsys.readouterr().err


def test_unreachable_opik_leaves_the_probe_run_whole(tmp_path, opik_env, capsys):
    opik_env.setenv("OPIK_URL_OVERRIDE", dead_url())
    opik_env.setenv("JUDGE_TEST_KEY", "judge-key")
    with Standin([answer(verdict(True, True), forever=True)]) as judge_llm:
        code, _ = evaluate(probes_suite(tmp_path), tmp_path / "run", judge_llm.base_url)
        assert not judge_llm.requests  # no suite, so nothing judged
    assert code == 0
    rates = json.loads((tmp_path / "run" / "probes.json").read_text())
    assert all("opik:assertions" not in names for names in rates.values())
    assert rates[WITH_ASSERTIONS[0]]["right_number"]["rate"] == 1.0
    err = capsys.readouterr().err
    assert err.count("opik:") == 1 and "unreachable" in err
