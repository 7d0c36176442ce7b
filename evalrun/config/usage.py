"""Config mistakes said in one line, with a fix: what Hydra and OmegaConf raise, as `UsageError`.

Hydra and OmegaConf say what went wrong at length - the whole option list (typed schemas
included), the config search path, "set HYDRA_FULL_ERROR=1". Here their exceptions become a
`UsageError` of one line (and at most one `hint:` line):

```
error: sandbox=dokcer: no such option; did you mean docker? (options: local, bwrap, docker, modal)
error: unknown key 'trails' (did you mean trials?)
```

After composition `refuse_additions` runs: `+key=value` may only add an entry to a free-form
mapping (`agent.env`, `agent.kwargs`, `provider.headers_env`, `profile.floors`, ...) or a config
group; anywhere else the key would be stored in config.yaml and read by nothing.

Options are listed the same way everywhere: the group's default first, then the rest in
alphabetical order, schemas never (`group_choices`). The command line's own checks (a bare word,
an unknown flag) are `evalrun.cli.usage`'s.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from evalrun.config.project import locate_config
from evalrun.config.schema import CONF_DIR
from evalrun.errors import UsageError

SCHEMA_SUFFIX = "_schema"
# A threshold bound given on the command line. A metric name ('@') cannot be part of a Hydra key,
# only a key inside a mapping value, so this is the form that reads (quoted for the shell); the
# CLI merges it into the chosen profile (`evalrun.cli.hydra.open_mapping_overrides`).
BOUND_EXAMPLE = "'profile.floors={pass@1: 0.8}'"
ADD_HINT = (
    "'+' adds an entry only to a free-form mapping such as +agent.env.NAME=value; "
    "`evalrun --cfg job` shows every key"
)


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `word`, when one is close enough to be a typo of it."""
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return close[0] if close else None


def _first_line(text: object) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


# --- group options ---------------------------------------------------------------------------
def group_options(folders: list[Path]) -> dict[str, list[str]]:
    """Group -> the option names its YAML files offer, over `folders` (a group is a subfolder
    holding YAML files; hydra's own groups are not evalrun's)."""
    options: dict[str, set[str]] = {}
    for folder in folders:
        for group in sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "hydra"):
            names = {f.stem for f in group.glob("*.yaml")}
            if names:
                options.setdefault(group.name, set()).update(names)
    return {group: sorted(names) for group, names in sorted(options.items())}


def option_folders() -> list[Path]:
    """The folders whose group subfolders offer options: evalrun's conf/, a project's conf/."""
    return list(dict.fromkeys([CONF_DIR, locate_config().config_dir]))


def default_first(names: list[str], default: str | None) -> list[str]:
    """A group's options as a person picks them: the default (or chosen) one first, then the
    others alphabetically - the order `--help` and a "no such option" error list them in."""
    first = [default] if default in names else []
    return first + sorted(n for n in names if n != default)


def group_choices(group: str, offered: Sequence[str] | None = None) -> list[str]:
    """A config group's options as a person picks them: the default first, then the others
    alphabetically; typed schemas left out. `offered`: the options Hydra listed (it knows a
    project's search path), else the group folders'."""
    names = list(offered) if offered is not None else group_options(option_folders()).get(group, [])
    default = None
    with suppress(Exception):  # the defaults may not compose: then no default goes first
        default = dict(_compose_defaults().hydra.runtime.choices).get(group)
    return default_first([n for n in names if not n.endswith(SCHEMA_SUFFIX)], default)


def _compose_defaults() -> Any:
    from hydra import compose, initialize_config_dir

    from evalrun.config.schema import register_configs

    register_configs()
    where = locate_config()
    with initialize_config_dir(config_dir=str(where.config_dir), version_base="1.3"):
        return compose(config_name=where.config_name, return_hydra_config=True)


def no_such_option(group: str, option: str, offered: Sequence[str] | None = None) -> UsageError:
    """`sandbox=dokcer: no such option; did you mean docker? (options: local, bwrap, ...)`."""
    options = group_choices(group, offered)
    guess = did_you_mean(option.removesuffix(SCHEMA_SUFFIX), options) or did_you_mean(
        option, options
    )
    suggestion = f"; did you mean {guess}?" if guess else ""
    listed = f" (options: {', '.join(options)})" if options else ""
    return UsageError(f"{group}={option}: no such option{suggestion}{listed}")


def _is_schema(group: str, option: str) -> bool:
    """Whether `group=option` names a typed schema in the ConfigStore (not an option)."""
    from hydra.core.config_store import ConfigStore

    from evalrun.config.schema import register_configs

    if not option.endswith(SCHEMA_SUFFIX):
        return False
    register_configs()
    try:
        return f"{option}.yaml" in ConfigStore.instance().list(group)
    except OSError:  # no such group in the store
        return False


def refuse_schema_options(overrides: list[str]) -> None:
    """`sandbox=docker_schema` names the typed schema the docker option starts from: it is no
    option (it has no defaults) and must not run."""
    candidates = [o for o in overrides if SCHEMA_SUFFIX in o]
    for override in parse(candidates):
        group = override.key_or_group
        values = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.value()]
        )
        for value in values:
            if isinstance(value, str) and _is_schema(group, value):
                raise no_such_option(group, value)


def parse(overrides: Sequence[str]) -> list[Any]:
    """Hydra's own parse of override strings (`hydra.core.override_parser` Override objects)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as exc:
        raise from_hydra(exc) from exc


# --- after composition -----------------------------------------------------------------------
def refuse_additions(cfg: Any, overrides: Sequence[str], groups: Iterable[str]) -> None:
    """`+key=value` (and `++key=value`) may add an entry to a free-form mapping, a config group
    (`groups`: the composed config's group choices) or Hydra's own settings; anywhere else the
    key would be stored and ignored (`+trails=3` ran with trials=1), so it is refused."""
    from omegaconf import DictConfig, OmegaConf

    additions = [o for o in overrides if o.startswith("+")]
    if not additions:
        return
    known_groups = set(groups)
    for override in parse(additions):
        key = override.key_or_group
        if key in known_groups or key == "hydra" or key.startswith(("hydra.", "hydra/")):
            continue
        parent_key = key.rpartition(".")[0]
        parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
        if isinstance(parent, DictConfig) and OmegaConf.get_type(parent) is dict:
            continue  # agent.env, agent.kwargs, provider.headers_env, profile.floors, ...
        target = OmegaConf.select(cfg, key)
        if isinstance(target, DictConfig) and OmegaConf.get_type(target) is dict:
            continue  # +profile.floors={pass@1: 0.8}: entries merged into such a mapping
        schema = OmegaConf.get_type(parent) if isinstance(parent, DictConfig) else None
        raise unknown_key(key, _schema_keys(schema), hint=ADD_HINT)


def _schema_keys(schema: Any) -> list[str]:
    if schema is not None and is_dataclass(schema):
        return [f.name for f in fields(schema) if not f.name.startswith("_")]
    return []


def unknown_key(full_key: str, siblings: Sequence[str], hint: str | None = None) -> UsageError:
    """`unknown key 'trails' (did you mean trials?)`; nested keys keep their dotted prefix."""
    prefix, _, leaf = full_key.rpartition(".")
    guess = did_you_mean(leaf, siblings)
    suggestion = f" (did you mean {prefix + '.' if prefix else ''}{guess}?)" if guess else ""
    if not guess and hint is None:
        hint = "`evalrun --cfg job` prints every key"
    return UsageError(f"unknown key '{full_key}'{suggestion}", hint=hint)


# --- Hydra's exceptions ----------------------------------------------------------------------
def from_hydra(exc: BaseException) -> UsageError:
    """What Hydra or OmegaConf raised while parsing or composing, as one line (and a hint)."""
    from hydra.errors import MissingConfigException, OverrideParseException

    if isinstance(exc, UsageError):
        return exc
    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file:
        group, _, option = str(exc.missing_cfg_file).rpartition("/")
        if group and exc.options is not None:
            return no_such_option(group, option, exc.options)
        return UsageError(f"config '{exc.missing_cfg_file}' not found")
    if isinstance(exc, OverrideParseException):
        key = str(exc.override).lstrip("+~").partition("=")[0]
        if "^" in str(exc.override):  # pass^k: no form of Hydra's grammar reads a '^'
            return UsageError(
                f"cannot read the override for '{key}': '^' (pass^k) cannot be written in an "
                "override; put that bound in a profile file (conf/profile/<name>.yaml)"
            )
        if "@" in key:  # a metric name, e.g. +profile.floors.pass@1=0.8
            return UsageError(
                f"cannot read the key '{key}': a metric name cannot be part of a key on the "
                f"command line; give the bound as a mapping: {BOUND_EXAMPLE}"
            )
        return UsageError(
            f"cannot read the override '{exc.override}': {_parse_reason(exc.message)}",
            hint="overrides are key=value; quote values with spaces or brackets: 'tags=[a,b]'",
        )
    ambiguous = re.search(r"Ambiguous value for argument '([^']*)'", str(exc))
    if ambiguous:  # `tags=python,git` outside a sweep
        arg = ambiguous[1]
        key, _, value = arg.partition("=")
        return UsageError(
            f"{arg}: a comma-separated value is a sweep; for a list write {key}=[{value}]",
            hint=f"to run once per value: evalrun -m {arg}",
        )
    return _from_omegaconf(exc.__cause__ or exc) or UsageError(_first_line(exc))


def _parse_reason(message: str) -> str:
    lines = [line for line in str(message).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("Error parsing", "See https"))]
    return lines[0].strip() if lines else "not key=value"


_ALREADY = "An item is already at '"
# OmegaConf's "Value 'abc' of type 'str' could not be converted to Integer" (and its kin),
# said plainly.
_EXPECTED = {
    "converted to Integer": "a whole number",
    "converted to Float": "a number",
    "not a valid bool": "true or false",
}
_PLAIN_KEY = re.compile(r"[\w\-/]+")  # what Hydra's grammar reads as one part of a dotted key


def _from_omegaconf(exc: BaseException) -> UsageError | None:
    from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

    text = str(exc)
    if _ALREADY in text:  # `+trials=3` where trials exists
        key = text.split(_ALREADY, 1)[1].split("'", 1)[0]
        return UsageError(f"'{key}' is already in the config: set it without '+' ({key}=...)")
    if not isinstance(exc, OmegaConfBaseException):
        return None
    full_key = getattr(exc, "full_key", None) or getattr(exc, "key", None) or ""
    schema = getattr(exc, "object_type", None)
    if isinstance(exc, ConfigKeyError) or type(exc).__name__ == "ConfigAttributeError":
        if schema is dict:  # a new entry of a free-form mapping needs its '+'
            parent, _, leaf = str(full_key).rpartition(".")
            plain = _PLAIN_KEY.fullmatch(leaf)
            form = f"+{full_key}=..." if plain else f"'{parent}={{{leaf}: ...}}'"
            return UsageError(f"'{full_key}' is a new entry: add it with {form}")
        return unknown_key(str(full_key), _schema_keys(schema))
    reason = _first_line(getattr(exc, "msg", text))
    expected = next((e for word, e in _EXPECTED.items() if word in reason), None)
    if expected and full_key:  # `trials=abc`
        return UsageError(f"{full_key}: expected {expected}, got {getattr(exc, 'value', '')!r}")
    if isinstance(exc, ValidationError) and full_key:
        value = getattr(exc, "value", None)
        shown = f"{full_key}={value}" if value is not None else str(full_key)
        return UsageError(f"{shown}: {reason}")
    return UsageError(f"{full_key}: {reason}" if full_key else reason)


def translating(call: Callable[[], Any]) -> Any:
    """Run `call`, turning what Hydra or OmegaConf raises into a `UsageError` (`from_hydra`)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        return call()
    except (HydraException, OmegaConfBaseException) as exc:
        raise from_hydra(exc) from exc
