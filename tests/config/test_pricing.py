"""Prices and cost: the litellm map read offline, config overrides, cost-equivalent tokens."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evalrun.analysis.metrics import summarize
from evalrun.config.pricing import Price, litellm_map_path, litellm_price, resolve_price
from evalrun.models.records import AgentResult, Outcome, SampleRecord, Usage
from evalrun.report.terminal import summary_lines


def test_cost_counts_fresh_cached_and_output_tokens_at_their_prices():
    price = Price(input_per_mtok=2.0, output_per_mtok=8.0, cache_read_per_mtok=0.5)
    # 1000 prompt tokens of which 600 came from the cache; cache writes fall back to input price
    cost = price.cost(input_tokens=1000, output_tokens=100, cache_read_tokens=600)
    assert cost == pytest.approx((400 * 2.0 + 600 * 0.5 + 100 * 8.0) / 1e6)
    assert price.cost(1000, 0, 0, 1000) == pytest.approx(1000 * 2.0 / 1e6)


def test_litellm_prices_come_from_its_bundled_map():
    path = litellm_map_path()
    assert path is not None, "litellm is a dependency of evalrun[agents]"
    entry = json.loads(path.read_text())["gpt-4o-mini"]
    price = litellm_price("gpt-4o-mini")
    assert price is not None
    assert price.input_per_mtok == pytest.approx(entry["input_cost_per_token"] * 1e6)
    assert price.output_per_mtok == pytest.approx(entry["output_cost_per_token"] * 1e6)
    assert price.cache_read_per_mtok == pytest.approx(entry["cache_read_input_token_cost"] * 1e6)


def test_provider_prefixes_are_tried_first_and_vendor_names_fall_back():
    gemini = litellm_price("gemini-2.5-flash", ["gemini"])
    assert gemini is not None and gemini.source == "litellm price for 'gemini/gemini-2.5-flash'"
    vendor = litellm_price("openai/gpt-4o-mini", ["openrouter"])
    assert vendor is not None and vendor.source == "litellm price for 'gpt-4o-mini'"


def test_an_unknown_model_has_no_price_and_a_reason():
    price, note = resolve_price("totally-made-up-model-9000")
    assert price is None
    assert note.startswith("unknown:") and "provider.price" in note


def test_a_config_price_overrides_litellm():
    mine = Price(input_per_mtok=1.0, output_per_mtok=1.0, source="config price")
    assert resolve_price("gpt-4o-mini", override=mine) == (mine, "config price")


def test_reading_prices_does_not_import_litellm():
    code = (
        "import sys; from evalrun.config.pricing import litellm_price; "
        "assert litellm_price('gpt-4o-mini'); print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cost_equivalent_tokens_weigh_cache_and_output():
    usage = Usage(
        input_tokens=1000, cache_read_tokens=600, cache_write_tokens=200, output_tokens=50
    )
    assert usage.cost_equivalent_tokens == pytest.approx(200 + 1.25 * 200 + 0.1 * 600 + 5 * 50)
    assert json.loads(usage.model_dump_json())["cost_equivalent_tokens"] == pytest.approx(760)


def _record(trial: int, usage: Usage) -> SampleRecord:
    return SampleRecord(
        run_id="r",
        task_id="001-a",
        fingerprint="f",
        trial=trial,
        outcome=Outcome.passed,
        agent=AgentResult(usage=usage),
        started_at=0.0,
        finished_at=1.0,
    )


def test_the_summary_and_report_show_cost_equivalent_tokens_even_without_prices():
    records = [
        _record(0, Usage(input_tokens=1000, output_tokens=100)),
        _record(1, Usage(input_tokens=2000, output_tokens=0, cache_read_tokens=1000)),
    ]
    summary = summarize(records, {"001-a": {}}, run_id="r", trials=2)
    assert summary.cost.total_usd is None
    assert summary.cost.cost_equivalent_tokens == pytest.approx(1500 + 1100)
    lines = summary_lines(summary)
    assert any(line.plain.startswith("cost-equivalent tokens 2,600") for line in lines)
    assert any("cost unknown" in line.plain for line in lines)
