"""Harbor's task.toml, read as liberally as Harbor reads it and validated where evalrun uses it.

`parse` returns the values evalrun acts on (typed below), the raw table (so every other field is
kept and can be shown), and the keys Harbor's models do not define (`harbor_keys`). A key evalrun
does not use is never checked: Harbor accepts `keywords = "x"` in a task it runs, so evalrun
does too. A value evalrun does use - a timeout, a difficulty, the network policy, a step's name -
is validated, and a bad one is a `TaskFormatError` naming the file and the dotted key.

Values are accepted in every spelling Harbor accepts: `version` for `schema_version`, a string
or a number; a difficulty in any letter case; the deprecated `memory`/`storage` sizes ("2G");
`allow_internet` beside `network_mode`. `${VAR}` and `${VAR:-default}` in `[environment.env]`,
`[verifier.env]` and `[solution.env]` are filled from the host's environment when the task
loads, as Harbor fills them when it runs (a variable that is unset and has no default is an
error naming it).
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalrun.errors import TaskFormatError
from evalrun.tasks.base import Difficulty, McpServer, McpTransport
from evalrun.tasks.harbor.keys import UnknownKey, unknown_keys

Version = str | int | float
_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STEP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([gGmMkK])\s*$")


class NetworkMode(StrEnum):
    public = "public"
    no_network = "no-network"
    allowlist = "allowlist"


class _Table(BaseModel):
    """Keys evalrun does not act on are ignored here (they stay in the raw table, kept)."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class Metadata(_Table):
    difficulty: Difficulty | None = None
    tags: tuple[str, ...] = ()

    @field_validator("difficulty", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class Healthcheck(_Table):
    """Harbor's `HealthcheckConfig`: Docker HEALTHCHECK semantics, with Harbor's defaults."""

    command: str
    interval_sec: float = Field(default=5.0, ge=0)
    timeout_sec: float = Field(default=30.0, gt=0)
    start_period_sec: float = Field(default=0.0, ge=0)
    start_interval_sec: float = Field(default=5.0, ge=0)
    retries: int = Field(default=3, ge=1)


def _uid_or_name(value: Any) -> Any:
    """A user given as a number (a uid) as its text, as Harbor accepts both."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


User = Annotated[str | None, BeforeValidator(_uid_or_name)]
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def allowed_host(entry: str) -> str:
    """One `allowed_hosts` entry, normalised as Harbor does (lower case, no trailing dot): a
    hostname, a `*.suffix` pattern, an IP address or a CIDR range - never a URL, port or path."""
    host = entry.strip().lower().rstrip(".")
    try:
        return str(
            ipaddress.ip_network(host, strict=False) if "/" in host else ipaddress.ip_address(host)
        )
    except ValueError:
        pass
    name = host.removeprefix("*.")
    if name and all(_HOST_LABEL.match(label) for label in name.split(".")):
        return host
    raise ValueError(
        f"expected a hostname, '*.suffix', an IP address or a CIDR range, got {entry!r}"
    )


def _allowed_hosts(value: tuple[str, ...] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(allowed_host(h) for h in value)


AllowedHosts = Annotated[tuple[str, ...] | None, AfterValidator(_allowed_hosts)]


class Phase(_Table):
    timeout_sec: float | None = Field(default=None, gt=0)
    user: User = None
    network_mode: NetworkMode | None = None
    allowed_hosts: AllowedHosts = None


class AgentTable(Phase):
    pass


MAIN_SERVICE = "main"  # Harbor's name for the agent's container among compose services


class CollectTable(_Table):
    """One `[[verifier.collect]]` command (Harbor's `VerifierCollectConfig`)."""

    command: str
    service: str = MAIN_SERVICE
    timeout_sec: float = Field(default=60.0, gt=0)
    user: User = None


class ArtifactTable(_Table):
    """One `artifacts` entry in its table form (Harbor's `ArtifactConfig`); `destination` names
    where Harbor's own run keeps it on the host, which a verifier does not see."""

    source: str = Field(min_length=1)
    destination: str | None = None
    exclude: tuple[str, ...] = ()
    service: str | None = None

    @field_validator("source")
    @classmethod
    def _no_parent(cls, value: str) -> str:
        if ".." in value.split("/"):
            raise ValueError(f"an artifact's source must not contain '..' (got {value!r})")
        return value

    @property
    def on_main(self) -> bool:
        return self.service in (None, MAIN_SERVICE)


class VerifierTable(Phase):
    env: dict[str, str] = Field(default_factory=dict)
    environment_mode: Literal["shared", "separate"] | None = None
    environment: EnvironmentTable | None = None
    collect: tuple[CollectTable, ...] = ()

    @model_validator(mode="after")
    def _shared_has_no_environment(self) -> VerifierTable:
        if self.environment_mode == "shared" and self.environment is not None:
            raise ValueError(
                "environment_mode = 'shared' and a [verifier.environment] contradict each other "
                "(Harbor refuses it): omit the environment or set environment_mode = 'separate'"
            )
        return self

    @property
    def separate(self) -> bool:
        """Harbor runs the verifier in a container of its own: so it says, or it names one."""
        return self.environment_mode == "separate" or (
            self.environment_mode is None and self.environment is not None
        )


class SolutionTable(_Table):
    env: dict[str, str] = Field(default_factory=dict)


class McpServerTable(_Table):
    """One `[[environment.mcp_servers]]` entry (Harbor's `MCPServerConfig`): validated as Harbor
    validates it - its transport defaults to `sse`, `http` means `streamable-http`, an HTTP
    server needs a `url` and a stdio one a `command`."""

    name: str = Field(min_length=1)
    transport: McpTransport = McpTransport.sse
    url: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("transport", mode="before")
    @classmethod
    def _http(cls, value: Any) -> Any:
        return McpTransport.streamable_http if value == "http" else value

    @model_validator(mode="after")
    def _reachable(self) -> McpServerTable:
        if self.transport is not McpTransport.stdio and not self.url:
            raise ValueError(f"'url' is required for transport {self.transport.value!r}")
        if self.transport is McpTransport.stdio and not self.command:
            raise ValueError("'command' is required for transport 'stdio'")
        return self

    def server(self) -> McpServer:
        """evalrun's own model of this server."""
        return McpServer(
            name=self.name,
            transport=self.transport,
            command=self.command if self.transport is McpTransport.stdio else None,
            args=self.args if self.transport is McpTransport.stdio else (),
            url=self.url if self.transport is not McpTransport.stdio else None,
        )


class EnvironmentTable(_Table):
    build_timeout_sec: float | None = Field(default=None, gt=0)
    docker_image: str | None = Field(default=None, min_length=1)
    os: Literal["linux", "windows"] = "linux"
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    memory: str | None = None  # deprecated spelling: "2G"
    storage_mb: int | None = Field(default=None, gt=0)
    storage: str | None = None  # deprecated spelling: "10G"
    gpus: int | None = Field(default=None, ge=0)
    tpu: dict[str, Any] | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: AllowedHosts = None
    allow_internet: bool | None = None
    mcp_servers: tuple[McpServerTable, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    healthcheck: Healthcheck | None = None
    workdir: str | None = None

    @field_validator("os", mode="before")
    @classmethod
    def _os_any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("memory", "storage")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is not None and not _SIZE.match(value):
            raise ValueError(f"expected a size like '2G' or '512M', got {value!r}")
        return value

    def servers(self) -> tuple[McpServer, ...]:
        """The MCP servers, one per name: a later entry replaces an earlier one, as in Harbor."""
        return tuple({s.name: s.server() for s in self.mcp_servers}.values())

    @property
    def memory_limit_mb(self) -> int | None:
        """`memory_mb`, else the deprecated `memory` size in MB."""
        return self.memory_mb if self.memory_mb is not None else _size_mb(self.memory)

    @property
    def storage_limit_mb(self) -> int | None:
        """`storage_mb`, else the deprecated `storage` size in MB."""
        return self.storage_mb if self.storage_mb is not None else _size_mb(self.storage)


def _size_mb(size: str | None) -> int | None:
    """A validated size ("2G", "512M") in MB, at least 1 (None stays None)."""
    if size is None:
        return None
    number, unit = _SIZE.match(size).groups()  # type: ignore[union-attr]
    return max(1, int(float(number) * {"g": 1024, "m": 1, "k": 1 / 1024}[unit.lower()]))


class StepTable(_Table):
    """One `[[steps]]` entry (Harbor's `StepConfig`); its files live in steps/<name>/."""

    name: str
    agent: AgentTable = Field(default_factory=AgentTable)
    verifier: VerifierTable = Field(default_factory=VerifierTable)
    min_reward: float | dict[str, float] | None = None
    healthcheck: Healthcheck | None = None

    @field_validator("name")
    @classmethod
    def _folder_name(cls, value: str) -> str:
        if not _STEP_NAME.match(value):
            raise ValueError(
                "a step name is its folder under steps/: letters, digits, '.', '_' and '-', "
                f"starting with a letter or digit (got {value!r})"
            )
        return value


VerifierTable.model_rebuild()
StepTable.model_rebuild()


class HarborToml(_Table):
    """The values of one task.toml that evalrun acts on."""

    schema_version: Version | None = None
    version: Version | None = None
    metadata: Metadata = Field(default_factory=Metadata)
    verifier: VerifierTable = Field(default_factory=VerifierTable)
    agent: AgentTable = Field(default_factory=AgentTable)
    environment: EnvironmentTable = Field(default_factory=EnvironmentTable)
    solution: SolutionTable = Field(default_factory=SolutionTable)
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    steps: tuple[StepTable, ...] | None = None
    artifacts: tuple[ArtifactTable, ...] = ()  # a path string is read as {source = path}

    @field_validator("artifacts", mode="before")
    @classmethod
    def _path_strings(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [{"source": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("steps")
    @classmethod
    def _unique_names(cls, steps: tuple[StepTable, ...] | None) -> tuple[StepTable, ...] | None:
        names = [s.name for s in steps or ()]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"step names must be unique, {', '.join(map(repr, twice))} repeats")
        return steps

    @property
    def schema_label(self) -> str | None:
        """The schema version as a string, whichever key and type the file used."""
        value = self.schema_version if self.schema_version is not None else self.version
        return None if value is None else str(value)


def parse(path: Path) -> tuple[HarborToml, dict[str, Any], list[UnknownKey]]:
    """Read one task.toml: (the values evalrun uses, the whole raw table, keys Harbor lacks).

    Raises `TaskFormatError` naming the file and key for TOML that does not parse and for a bad
    value evalrun uses.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskFormatError(path, f"not valid TOML: {exc}") from exc
    try:
        config = HarborToml.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        message = first["msg"]
        if "input" in first and first["type"] != "missing":
            message = f"{message} (got {first['input']!r})"
        raise TaskFormatError(path, message, field=loc or None) from exc
    return config, raw, unknown_keys(raw)


def fill_templates(values: dict[str, str], path: Path, table: str) -> dict[str, str]:
    """`values` with every `${VAR}` / `${VAR:-default}` filled from the host's environment."""
    filled = {}
    for key, value in values.items():

        def one(match: re.Match[str], key: str = key) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise TaskFormatError(
                path,
                f"${{{name}}} is not set on the host and has no default "
                f"(write ${{{name}:-default}} for one)",
                field=f"{table}.{key}",
            )

        filled[key] = _TEMPLATE.sub(one, value)
    return filled
