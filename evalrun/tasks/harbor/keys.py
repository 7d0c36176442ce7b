"""Every key of Harbor's task.toml, table by table, and a walk that finds the keys it lacks.

Harbor's own models (`TaskConfig` and the configs it nests) ignore keys they do not define and
take anything under `[metadata]`, and the suites people publish rely on that: `task.format`,
`agent.kwargs`, a `[verifier.tests]` table. evalrun is exactly as liberal - such a key loads and
is kept - and louder: `unknown_keys` lists each one (file, table, key) so a run can warn once,
and `strict_formats=true` / `evalrun check --strict` can refuse it.

The catalogue follows Harbor's current models (schema 1.4): `TaskConfig`, `PackageInfo`,
`Author`, `VerifierConfig` (with `[[verifier.collect]]` and a nested `[verifier.environment]`),
`AgentConfig`, `SolutionConfig`, `EnvironmentConfig` (with `tpu`, `mcp_servers`, `healthcheck`),
`StepConfig` and `ArtifactConfig`. docs/harbor.md says what each key means and what evalrun does
with it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FREE = "free"  # a table whose keys are the author's own: [metadata], every `env`


@dataclass(frozen=True)
class ListOf:
    """An array whose entries may be tables of `schema` (e.g. `[[steps]]`)."""

    schema: Mapping[str, Any]


HEALTHCHECK = dict.fromkeys(
    ("command", "interval_sec", "timeout_sec", "start_period_sec", "start_interval_sec", "retries")
)
ARTIFACT = dict.fromkeys(("source", "destination", "exclude", "service"))
ENVIRONMENT: dict[str, Any] = {
    **dict.fromkeys(
        (
            "build_timeout_sec",
            "docker_image",
            "os",
            "cpus",
            "memory_mb",
            "storage_mb",
            "memory",
            "storage",
            "gpus",
            "gpu_types",
            "network_mode",
            "allowed_hosts",
            "allow_internet",
            "skills_dir",
            "workdir",
        )
    ),
    "tpu": dict.fromkeys(("type", "topology")),
    "mcp_servers": ListOf(
        dict.fromkeys(("name", "transport", "url", "command", "args", "headers"))
    ),
    "env": FREE,
    "healthcheck": HEALTHCHECK,
}
AGENT = dict.fromkeys(("timeout_sec", "user", "network_mode", "allowed_hosts"))
VERIFIER: dict[str, Any] = {
    **AGENT,
    "env": FREE,
    "environment_mode": None,
    "environment": ENVIRONMENT,
    "collect": ListOf(dict.fromkeys(("command", "service", "timeout_sec", "user"))),
}
STEP: dict[str, Any] = {
    "name": None,
    "agent": AGENT,
    "verifier": VERIFIER,
    "min_reward": None,
    "healthcheck": HEALTHCHECK,
    "artifacts": ListOf(ARTIFACT),
}
TASK_TOML: dict[str, Any] = {
    "schema_version": None,
    "version": None,  # the older spelling of schema_version
    "source": None,
    "multi_step_reward_strategy": None,
    "artifacts": ListOf(ARTIFACT),
    "task": {
        **dict.fromkeys(("name", "version", "description", "keywords")),
        "authors": ListOf(dict.fromkeys(("name", "email"))),
    },
    "metadata": FREE,
    "verifier": VERIFIER,
    "agent": AGENT,
    "environment": ENVIRONMENT,
    "solution": {"env": FREE},
    "steps": ListOf(STEP),
}


@dataclass(frozen=True)
class UnknownKey:
    """A key Harbor's models do not define: `table` is where it sits (`verifier`, `steps[0]`,
    "" for the top level), `key` its name."""

    table: str
    key: str
    close: str | None = None  # a defined key one typo away
    is_table: bool = False  # the key holds a whole table (`[verifier.tests]`)
    value: Any = field(default=None, compare=False)

    def describe(self) -> str:
        hint = f" (did you mean {self.close!r}?)" if self.close else ""
        if self.is_table:
            return f"unknown table [{self.dotted}]{hint}"
        where = f"[{self.table}] " if self.table else ""
        return f"unknown key {where}{self.key!r}{hint}"

    @property
    def dotted(self) -> str:
        return f"{self.table}.{self.key}" if self.table else self.key


def unknown_keys(raw: Mapping[str, Any], schema: Mapping[str, Any] = TASK_TOML) -> list[UnknownKey]:
    """Every key in `raw` (a parsed task.toml) that Harbor's models do not define, in file order."""
    return list(_walk(raw, schema, ""))


def _walk(raw: Mapping[str, Any], schema: Mapping[str, Any], table: str) -> Iterator[UnknownKey]:
    for key, value in raw.items():
        if key not in schema:
            close = difflib.get_close_matches(str(key), list(schema), n=1, cutoff=0.8)
            yield UnknownKey(
                table, str(key), close[0] if close else None, isinstance(value, dict), value
            )
            continue
        inner = schema[key]
        where = f"{table}.{key}" if table else str(key)
        if isinstance(inner, dict) and isinstance(value, dict):
            yield from _walk(value, inner, where)
        elif isinstance(inner, ListOf) and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    yield from _walk(item, inner.schema, f"{where}[{index}]")


def flatten(raw: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": 1}}` -> `{"a.b": 1}`; arrays are kept whole as values."""
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(flatten(value, name))
        else:
            flat[name] = value
    return flat
