"""Harbor's task.toml, read liberally in values and strictly in structure.

Suites in the wild differ in small ways, so values are accepted in every spelling seen: a
`[task] name` with or without an `org/` prefix, `version`/`schema_version` as a string or a
number, a difficulty in any letter case, the deprecated `memory`/`storage` sizes. The structure is
strict: a table or key Harbor does not define is a `TaskFormatError` naming the file and the key,
so a typo (`timeout_secs`) is never silently ignored. `[metadata]`, free-form in Harbor, is held to
the keys Harbor's own tasks use for the same reason.

Keys that evalrun honours: `[agent] timeout_sec` (the agent phase timeout), `[verifier]
timeout_sec` and `env`, `[solution] env`, `[environment] build_timeout_sec` and `docker_image`,
`[metadata] difficulty` and `tags`. The rest (resources, users, network policy, authorship) is
validated and kept for reference. Features evalrun cannot provide (GPUs, MCP servers, health
checks, agent environment variables, a separate verifier container, multi-step tasks, templated
`${VAR}` values read from the host) are reported by `unsupported()`, and planning skips or refuses
those tasks with that reason.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrun.errors import TaskFormatError
from evalrun.formats.base import Difficulty

Version = str | int | float


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Author(_Table):
    name: str
    email: str | None = None


class PackageTable(_Table):
    """[task]: the package identity in Harbor's registry."""

    name: str | None = None
    description: str = ""
    authors: tuple[Author, ...] = ()
    keywords: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _org_optional(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = value.split("/")
        if len(parts) > 2 or not all(p.strip() for p in parts) or any(c.isspace() for c in value):
            raise ValueError(f"expected 'name' or 'org/name' without spaces, got {value!r}")
        return value


class MetadataTable(_Table):
    author_name: str | None = None
    author_email: str | None = None
    author_organization: str | None = None
    description: str | None = None
    difficulty: Difficulty | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()
    expert_time_estimate_min: float | None = None
    junior_time_estimate_min: float | None = None

    @field_validator("difficulty", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class _Phase(_Table):
    user: str | int | None = None
    network_mode: str | None = None
    allowed_hosts: tuple[str, ...] = ()


class VerifierTable(_Phase):
    timeout_sec: float | None = Field(default=None, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    environment_mode: str | None = None
    environment: dict[str, Any] | None = None


class AgentTable(_Phase):
    timeout_sec: float | None = Field(default=None, gt=0)


class EnvironmentTable(_Table):
    build_timeout_sec: float | None = Field(default=None, gt=0)
    docker_image: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    memory: str | None = None  # deprecated spelling: "2G"
    storage: str | None = None  # deprecated spelling: "10G"
    gpus: int = Field(default=0, ge=0)
    gpu_types: tuple[str, ...] | None = None
    allow_internet: bool | None = None
    network_mode: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    mcp_servers: tuple[dict[str, Any], ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: dict[str, Any] | None = None


class SolutionTable(_Table):
    env: dict[str, str] = Field(default_factory=dict)


class HarborToml(_Table):
    """One task.toml."""

    version: Version | None = None
    schema_version: Version | None = None
    source: str | None = None
    artifacts: tuple[Any, ...] = ()
    task: PackageTable = Field(default_factory=PackageTable)
    metadata: MetadataTable = Field(default_factory=MetadataTable)
    verifier: VerifierTable = Field(default_factory=VerifierTable)
    agent: AgentTable = Field(default_factory=AgentTable)
    environment: EnvironmentTable = Field(default_factory=EnvironmentTable)
    solution: SolutionTable = Field(default_factory=SolutionTable)
    steps: tuple[dict[str, Any], ...] = ()

    @property
    def schema(self) -> str | None:
        """The schema version as a string, whichever key and type the file used."""
        value = self.schema_version if self.schema_version is not None else self.version
        return None if value is None else str(value)

    def unsupported(self) -> str | None:
        """Why evalrun cannot run this task as written (None: it can)."""
        env = self.environment
        problems = []
        if self.steps:
            problems.append("multi-step tasks ([[steps]])")
        if env.gpus:
            problems.append(f"GPUs ([environment] gpus = {env.gpus})")
        if env.mcp_servers:
            problems.append("MCP servers ([environment] mcp_servers)")
        if env.healthcheck:
            problems.append("health checks ([environment.healthcheck])")
        if env.env:
            problems.append(f"agent environment variables ([environment.env] {', '.join(env.env)})")
        if (self.verifier.environment_mode or "shared") != "shared":
            problems.append(f"a {self.verifier.environment_mode} verifier environment")
        for table, values in (
            ("verifier.env", self.verifier.env),
            ("solution.env", self.solution.env),
        ):
            templated = [k for k, v in values.items() if "${" in v]
            if templated:
                problems.append(
                    f"host-variable templates in [{table}] {', '.join(templated)} (evalrun never "
                    "passes host variables into a sandbox)"
                )
        return "; ".join(problems) or None


def parse(path: Path) -> HarborToml:
    """Read and validate one task.toml; raise `TaskFormatError` naming the file and key."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskFormatError(path, f"not valid TOML: {exc}") from exc
    try:
        return HarborToml.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(p) for p in first["loc"]]
        raise TaskFormatError(path, _explain(first, loc, raw), field=".".join(loc) or None) from exc


def _explain(error: Any, loc: list[str], raw: dict[str, Any]) -> str:
    if error["type"] != "extra_forbidden":
        message = error["msg"]
        if "input" in error and error["type"] != "missing":
            message = f"{message} (got {error['input']!r})"
        return message
    model: type[BaseModel] = HarborToml
    for part in loc[:-1]:
        annotation = model.model_fields[part].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model = annotation
    allowed = list(model.model_fields)
    kind = "table" if len(loc) == 1 and isinstance(raw.get(loc[0]), dict) else "key"
    close = difflib.get_close_matches(loc[-1], allowed, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    where = f"[{'.'.join(loc[:-1])}] " if len(loc) > 1 else ""
    return f"unknown {kind} {where}{loc[-1]!r}: {hint}allowed: {', '.join(allowed)}"
