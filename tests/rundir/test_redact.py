"""Secrets never reach a written file: masked by name, scrubbed by value, never replayed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from evalrun.rundir.redact import (
    MASK,
    SecretValues,
    is_secret_key,
    redact,
    redact_overrides,
    redacted_keys,
)
from tests.conftest import REPO
from tests.opik_standin import OpikStandIn


def test_secret_names():
    for name in ("api_key", "OPENAI_API_KEY", "Modal-Secret", "Authorization", "token", "password"):
        assert is_secret_key(name), name
    for name in ("api_key_env", "max_tokens", "keyboard", "monkey", "tokens_in", "name"):
        assert not is_secret_key(name), name


def test_redact_masks_nested_values_and_keeps_the_rest():
    config = {
        "provider": {"api_key": "sk-123", "api_key_env": "OPENAI_API_KEY", "model": "m"},
        "headers": [{"Authorization": "Bearer x"}],
        "token": None,
    }
    out = redact(config)
    assert out["provider"] == {"api_key": MASK, "api_key_env": "OPENAI_API_KEY", "model": "m"}
    assert out["headers"] == [{"Authorization": MASK}]
    assert out["token"] is None
    assert config["provider"]["api_key"] == "sk-123"  # the input is not modified


# --- by value ----------------------------------------------------------------------------------
def test_collect_finds_every_value_the_run_passes_on_or_reads_as_a_key():
    environ = {
        "OPENAI_API_KEY": "sk-provider-0123456789",  # named by provider.api_key_env
        "MY_TOOL_CRED": "pass-env-value-42424242",  # handed to the agent by pass_env
        "GATEWAY_HDR": "header-value-77777777",  # named by a headers_env mapping
        "GITHUB_TOKEN": "ghp_host_secret_000000",  # not named anywhere, but named like a secret
        "HOME": "/home/someone-long-path",  # neither: left alone
        "SHORT_TOKEN": "abc",  # too short to be a credential: ignored
    }
    config = {
        "provider": {"api_key_env": "OPENAI_API_KEY", "headers_env": {"X-Gw": "GATEWAY_HDR"}},
        "agent": {
            "pass_env": ["MY_TOOL_CRED", "NOT_SET"],
            "env": {"OTHER": "agent-env-value-1234", "IS_SANDBOX": "1"},
            "cmd": "tool --yes",
        },
        "judge": {"api_key": "judge-literal-key-5555"},
    }
    secrets = SecretValues.collect(config, environ)
    assert set(secrets.sources.values()) == {
        "OPENAI_API_KEY",
        "MY_TOOL_CRED",
        "GATEWAY_HDR",
        "GITHUB_TOKEN",
        "agent.env.OTHER",
        "agent.env.IS_SANDBOX",
        "judge.api_key",
    }
    text = " ".join(
        v for v in [*environ.values(), "agent-env-value-1234", "judge-literal-key-5555"]
    )
    assert secrets.scrub(text) == "*** *** *** *** /home/someone-long-path abc *** ***"
    assert secrets.unscrubbed == []  # IS_SANDBOX=1 is short, but not named like a secret


def test_short_values_are_not_scrubbed_from_text_and_a_secret_named_one_is_reported():
    secrets = SecretValues({"abc12": "MY_API_KEY", "1": "agent.env.DEBUG", "x" * 8: "TOKEN"})
    assert secrets.scrub("abc12 1 xxxxxxxx done") == "abc12 1 *** done"
    assert secrets.unscrubbed == ["MY_API_KEY"]
    masked = redact({"agent": {"env": {"MY_API_KEY": "abc12"}}}, secrets)
    assert masked == {"agent": {"env": {"MY_API_KEY": MASK}}}  # still masked by name


def test_the_longer_of_two_overlapping_secrets_is_scrubbed_whole():
    secrets = SecretValues({"sk-abcdefgh": "A", "sk-abcdefgh-ijklmnop": "B"})
    assert secrets.scrub("x sk-abcdefgh-ijklmnop y sk-abcdefgh") == "x *** y ***"


def test_overrides_mask_secret_keys_and_every_agent_env_value_but_keep_env_references():
    secrets = SecretValues({"sk-in-a-command-000": "MY_API_KEY"})
    written = redact_overrides(
        [
            "+agent.env.OTHER=plain-looking-value",
            "+agent.env.MY_API_KEY=${oc.env:MY_API_KEY}",
            "+provider.headers_env.Authorization=Bearer-abc",
            "agent.cmd=tool --key sk-in-a-command-000",
            "trials=3",
        ],
        secrets,
    )
    assert written == [
        "+agent.env.OTHER=***",
        "+agent.env.MY_API_KEY=${oc.env:MY_API_KEY}",
        "+provider.headers_env.Authorization=***",
        "agent.cmd=tool --key ***",
        "trials=3",
    ]
    assert redacted_keys(written) == [
        "+agent.env.OTHER",
        "+provider.headers_env.Authorization",
        "agent.cmd",
    ]


# --- end to end: a run that is handed secrets, and an agent that prints them -------------------
PASS_ENV_SECRET = "sk-pass-env-0123456789abcdef"
OVERRIDE_SECRET = "tok-override-9876543210zyxw"
LEAKY_AGENT = """\
echo "key=$MY_API_KEY other=$OTHER other-len=${#OTHER}"
printf '42\\nleak %s\\n' "$MY_API_KEY" > answer.txt
printf '{"name": "bash", "args": {"cmd": "use %s"}, "result": "%s"}\\n' "$OTHER" "$MY_API_KEY" \\
  > "$EVALRUN_TRAJECTORY_FILE"
echo "stderr has $OTHER" >&2
exit 3
"""
SHOWING_VERIFY = """\
echo "answer.txt was: $(cat answer.txt)"
[ "$(head -1 answer.txt)" = 42 ] && echo PASS || { echo "FAIL: $(cat answer.txt)"; exit 1; }
"""


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def test_secret_values_reach_the_agent_but_no_file_and_no_opik_request_and_never_replay(
    make_task, tmp_path
):
    suite = make_task(
        "001-leak", files={"setup/agent.sh": LEAKY_AGENT, "verify/verify.sh": SHOWING_VERIFY}
    ).parent
    run_dir = tmp_path / "run"
    with OpikStandIn() as opik:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OPIK_")},
            "HOME": str(tmp_path / "home"),
            "OPIK_URL_OVERRIDE": opik.url,
            "OPIK_ANALYTICS_ENABLE": "false",
            "MY_API_KEY": PASS_ENV_SECRET,
            "OTHER": OVERRIDE_SECRET,
        }
        args = [
            f"tasks_dir={suite}",
            f"run_dir={run_dir}",
            "trials=2",
            "agent=command",
            "agent.cmd='bash agent.sh'",
            "agent.pass_env=[MY_API_KEY]",
            f"+agent.env.OTHER={OVERRIDE_SECRET}",
            "tracker=opik",
        ]
        first = _cli(args, env)
        assert first.returncode == 0, first.stderr

        samples = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
        assert [s["outcome"] for s in samples] == ["pass", "pass"]
        agent = samples[0]["agent"]  # the agent saw both values; what was written has ***
        assert agent["output"].strip() == f"key=*** other=*** other-len={len(OVERRIDE_SECRET)}"
        assert agent["trajectory"][0]["args"] == {"cmd": "use ***"}
        assert "stderr has ***" in agent["error"]
        assert "leak ***" in samples[0]["verify_output"]
        assert "+agent.env.OTHER=***" in (run_dir / "overrides.yaml").read_text()

        # a resume cannot replay the redacted override: refused, naming it, before anything ran
        lines = (run_dir / "samples.jsonl").read_text().splitlines(keepends=True)
        (run_dir / "samples.jsonl").write_text(lines[0])  # as if killed after one sample
        refused = _cli([f"resume={run_dir}"], env)
        assert refused.returncode == 2
        message = " ".join(refused.stderr.split())
        assert "holds +agent.env.OTHER with a redacted value" in message
        assert "export OTHER=... and add '+agent.env.OTHER=${oc.env:OTHER}'" in message
        assert len((run_dir / "samples.jsonl").read_text().splitlines()) == 1

        # given again through the environment, the resumed sample sees the real value
        again = _cli([f"resume={run_dir}", "+agent.env.OTHER=${oc.env:OTHER}"], env)
        assert again.returncode == 0, again.stderr
        assert "1 samples already recorded, 1 to run" in again.stdout
        resumed = json.loads((run_dir / "samples.jsonl").read_text().splitlines()[1])
        assert resumed["agent"]["output"].strip().endswith(f"other-len={len(OVERRIDE_SECRET)}")
        overrides = (run_dir / "overrides.yaml").read_text()
        assert "+agent.env.OTHER=${oc.env:OTHER}" in overrides  # replayable next time

        wire = [r.raw + json.dumps(r.headers) for r in opik.requests]
        assert len(opik.traces) == 3  # both first samples, then the resumed one
    for secret in (PASS_ENV_SECRET, OVERRIDE_SECRET):
        for text in wire:
            assert secret not in text
        for path in run_dir.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
