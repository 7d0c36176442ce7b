"""Secrets never reach a written file: masked by name in configs, scrubbed by value everywhere.

Two rules, applied to everything a run writes (config.yaml, overrides.yaml, samples.jsonl, the
per-sample logs, summary.json, and so report.html, junit.xml and what trackers send):

- **By name** (`redact`, `redact_overrides`): a key named like a credential (`is_secret_key`) has
  its value masked, and so has every value of an `env` mapping (`agent.env`: variables handed to
  the agent inside the sandbox, where a key is the usual reason to set one). A value written as
  an `${oc.env:NAME}` reference is kept: it names a variable, it is not the secret, and a resume
  can replay it.
- **By value** (`SecretValues`): the run collects the values it knows are secret - the variables
  named by any `*_env` setting (`provider.api_key_env`, `agent.pass_env`, `headers_env`, judge
  keys), every `env` mapping's values, every secret-named config value, and every host
  variable whose own name looks secret (`OPENAI_API_KEY`, `MODAL_TOKEN_SECRET`, ...) - and
  replaces each occurrence in any text written with `***`. This is what catches a key the agent
  printed, echoed into a file the verifier shows, or embedded in a command line.

Short values: a value shorter than `MIN_SCRUB_CHARS` (8) is not scrubbed from free text: "1",
"true" or "dev" would shred ordinary output, and such a value is not a credential anyway. It is
still masked by name in config.yaml and overrides.yaml; when its name looks secret the run says
once that it was not scrubbed (`SecretValues.unscrubbed`).

A masked value is gone for good, so a resume can never replay it (`redacted_keys` finds the
overrides that would be replayed as `***`; the CLI refuses and asks for them again).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

MASK = "***"
MIN_SCRUB_CHARS = 8
_SECRET_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "authorization"}
_SPLIT = re.compile(r"[_\-.\s]+")
_ENV_REF = re.compile(r"^\$\{oc\.env:[A-Za-z_][A-Za-z0-9_]*\}$")
ENV_MAPPING = "env"  # a config mapping of variables passed into the sandbox (agent.env)
IDENTITY_FIELDS = ("run_id", "task_id", "fingerprint", "trial")  # a record's cell: never touched

M = TypeVar("M", bound=BaseModel)


def is_secret_key(name: str) -> bool:
    """`api_key`, `Modal-Secret`, `Authorization` are secrets; `api_key_env`, `max_tokens` not."""
    words = [w for w in _SPLIT.split(name.lower()) if w]
    if not words or words[-1] == "env":
        return False
    return any(w in _SECRET_WORDS for w in words)


def _names_variables(key: str) -> bool:
    """`api_key_env`, `pass_env`, `headers_env`: the value names environment variables."""
    words = [w for w in _SPLIT.split(key.lower()) if w]
    return len(words) > 1 and words[-1] == "env"


def is_env_reference(value: Any) -> bool:
    """`${oc.env:NAME}`: the variable's name, resolved when the config is composed."""
    return isinstance(value, str) and bool(_ENV_REF.match(value.strip()))


class SecretValues:
    """The secret values one run knows, and `scrub` to remove them from any text.

    `values` maps each secret value to where it came from (a variable or a config key), which
    is what messages name - never the value."""

    def __init__(self, values: Mapping[str, str] | None = None):
        self.sources = dict(values or {})
        scrubbed = sorted((v for v in self.sources if len(v) >= MIN_SCRUB_CHARS), key=len)
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in reversed(scrubbed))) if scrubbed else None
        )

    @property
    def unscrubbed(self) -> list[str]:
        """Sources with a secret-looking name whose value is too short to scrub by value."""
        return sorted(
            {
                name
                for value, name in self.sources.items()
                if value and len(value) < MIN_SCRUB_CHARS and is_secret_key(name.split(".")[-1])
            }
        )

    def __bool__(self) -> bool:
        return self._pattern is not None

    def scrub(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def scrub_data(self, data: Any) -> Any:
        """A deep copy of `data` with every secret value removed from its strings."""
        if self._pattern is None:
            return data
        if isinstance(data, str):
            return self.scrub(data)
        if isinstance(data, Mapping):
            return {k: self.scrub_data(v) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.scrub_data(v) for v in data]
        return data

    def scrub_record(self, record: M) -> M:
        """`record` with its text scrubbed; the fields naming its cell are left as they are."""
        if self._pattern is None:
            return record
        data = record.model_dump(mode="json")
        clean = self.scrub_data(data)
        for name in IDENTITY_FIELDS:
            if name in data:
                clean[name] = data[name]
        return type(record).model_validate(clean)

    @classmethod
    def collect(
        cls, config: Mapping[str, Any], environ: Mapping[str, str] | None = None
    ) -> SecretValues:
        """Every secret value the resolved `config` and the environment make known (see the
        module docstring). Values are read now; nothing here is written anywhere."""
        environ = os.environ if environ is None else environ
        found: dict[str, str] = {}

        def add(value: Any, source: str) -> None:
            if isinstance(value, str) and value.strip() and value not in found:
                found[value] = source

        def add_variables(names: Any) -> None:
            if isinstance(names, str):
                names = [names]
            elif isinstance(names, Mapping):
                names = list(names.values())
            for name in names if isinstance(names, Iterable) else ():
                if isinstance(name, str) and name in environ:
                    add(environ[name], name)

        def walk(node: Any, path: str) -> None:
            if isinstance(node, list | tuple):
                for item in node:
                    walk(item, path)
                return
            if not isinstance(node, Mapping):
                return
            for raw_key, value in node.items():
                key = str(raw_key)
                where = f"{path}.{key}" if path else key
                if _names_variables(key):
                    add_variables(value)
                if key == ENV_MAPPING and isinstance(value, Mapping):
                    for name, item in value.items():
                        add(item, f"{where}.{name}")
                if is_secret_key(key):
                    add(value, where)
                walk(value, where)

        walk(config, "")
        for name, value in environ.items():  # short ones are not credentials: not warned about
            if is_secret_key(name) and len(value) >= MIN_SCRUB_CHARS:
                add(value, name)
        return cls(found)


def redact(value: Any, secrets: SecretValues | None = None) -> Any:
    """A deep copy of `value` with every secret-named key's value masked (None stays None),
    every `env` mapping's values masked, and every known secret value scrubbed."""
    scrub = secrets or SecretValues()

    def mask(key: str, item: Any, in_env: bool) -> Any:
        if item in (None, "") or is_env_reference(item):
            return item
        if in_env or is_secret_key(key):
            return MASK
        return walk(item)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if str(k) == ENV_MAPPING and isinstance(v, dict):
                    out[k] = {name: mask(str(name), item, True) for name, item in v.items()}
                else:
                    out[k] = mask(str(k), v, False)
            return out
        if isinstance(node, list | tuple):
            return [walk(v) for v in node]
        return scrub.scrub(node) if isinstance(node, str) else node

    return walk(value)


def _override_key(item: str) -> tuple[str, str, str]:
    """`+agent.env.X=v` -> ("+agent.env.X", "agent.env.X", "v")."""
    key, _, value = item.partition("=")
    return key, key.lstrip("+~"), value


def _masked_by_name(dotted: str) -> bool:
    parts = dotted.split(".")
    return is_secret_key(parts[-1]) or ENV_MAPPING in parts[1:]


def redact_overrides(overrides: Iterable[str], secrets: SecretValues | None = None) -> list[str]:
    """Command-line overrides as they may be written: a secret-named key's value and any
    `agent.env` value masked (an `${oc.env:NAME}` reference kept), known values scrubbed."""
    scrub = secrets or SecretValues()
    out = []
    for item in overrides:
        key, dotted, value = _override_key(item)
        if "=" in item and value and _masked_by_name(dotted) and not is_env_reference(value):
            out.append(f"{key}={MASK}")
        else:
            out.append(scrub.scrub(item))
    return out


def override_name(item: str) -> str:
    """The dotted config key an override sets, without its `+`/`++`/`~` prefix."""
    return _override_key(item)[1]


def redacted_keys(overrides: Iterable[str]) -> list[str]:
    """The overrides (as written) whose value was masked or scrubbed: a resume cannot replay
    them."""
    return [_override_key(o)[0] for o in overrides if "=" in o and MASK in _override_key(o)[2]]


def redacted_replay_message(path: Any, keys: list[str]) -> str:
    """Why a resume is refused: each redacted key, and how to give it again through the
    environment (an `${oc.env:NAME}` reference is recorded as written, so it replays)."""
    lines = [
        f"resume: {path} holds {', '.join(keys)} with a redacted value (secret values are never "
        "written, so a resume cannot replay them). Give each again, through the environment:"
    ]
    for key in keys:
        variable = key.lstrip("+~").rsplit(".", 1)[-1].upper().replace("-", "_")
        lines.append(f"  export {variable}=...  and add  '{key}=${{oc.env:{variable}}}'")
    lines.append("(an ${oc.env:NAME} reference is recorded as written and replayed by a resume)")
    return "\n".join(lines)
