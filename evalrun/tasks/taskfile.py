"""task.yaml read into a `TaskSpec`, with every problem of the file told at once, in plain words,
at its line and column - as a compiler reports a source file:

```
tasks/002-x/task.yaml:4:1: unknown key 'max_step' (did you mean 'max_steps'?)
tasks/002-x/task.yaml:5:13: difficulty: expected one of easy, medium, hard, got 'hrad' (did ...
tasks/002-x/task.yaml:6:7: tags: expected a list of tags, e.g. [python], got 'python'
```

pydantic finds the problems; this module says them: what a field expects comes from its
description on `TaskSpec`, the place from the YAML composer's node marks (`yamlio.places`). A
misspelt key that explains a missing one is told once, as the misspelling.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from evalrun.config import yamlio
from evalrun.config.usage import did_you_mean
from evalrun.errors import TaskFormatError
from evalrun.tasks import lint
from evalrun.tasks.base import TaskSpec

SHOWN_INPUT_CHARS = 60


def read_spec(task_file: Path) -> TaskSpec:
    """The `TaskSpec` task_file holds, its id the name of the folder it is in; raises
    `TaskFormatError` listing every problem found (a file that does not parse has one: where
    the parser stopped)."""
    try:
        text = task_file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(task_file, f"not UTF-8 text: {exc}") from exc
    try:
        raw = yamlio.safe_load(text)
    except yaml.YAMLError as exc:
        problem, place = yamlio.syntax_problem(exc)
        line, column = (place.line, place.column) if place else (None, None)
        raise TaskFormatError(
            task_file, f"YAML syntax error: {problem}", line=line, column=column
        ) from exc
    if not isinstance(raw, dict):
        raise TaskFormatError(
            task_file, f"expected a mapping of fields, got {type(raw).__name__}", line=1, column=1
        )
    try:
        spec = TaskSpec.model_validate(raw)
        errors: list[ErrorDetails] = []
    except ValidationError as exc:
        errors = exc.errors()
    found = faults(task_file, text, errors) if errors else []
    folder = task_file.parent.name
    if isinstance(raw.get("id"), str) and raw["id"] != folder:
        what = f"id: {raw['id']!r} does not match its folder name {folder!r}"
        found.append(_fault(task_file, yamlio.places(text), ("id",), what))
    lint.refuse(found)
    return spec


def faults(task_file: Path, text: str, errors: list[ErrorDetails]) -> list[lint.Fault]:
    """One `lint.Fault` per problem pydantic found in `text`, placed and in plain words; a
    required key reported missing is left out when an unknown key beside it is its misspelling."""
    places = yamlio.places(text)
    found: list[lint.Fault] = []
    misspelt: set[tuple[str | int, ...]] = set()
    for error in errors:
        if error["type"] != "extra_forbidden":
            continue
        *parent, key = error["loc"]
        unset = [f for f in _fields(parent) if (*parent, f) not in places]
        guess = did_you_mean(str(key), unset)
        if guess:
            misspelt.add((*parent, guess))
        hint = f"did you mean {guess!r}?" if guess else f"allowed: {', '.join(_fields(parent))}"
        what = _under(parent, f"unknown key {key!r} ({hint})")
        found.append(_fault(task_file, places, error["loc"], what, key=True))
    for error in errors:
        loc = error["loc"]
        if error["type"] == "extra_forbidden" or loc in misspelt:
            continue
        if error["type"] == "missing":
            *parent, key = loc
            expected = _expected(loc)
            what = f"missing key {key!r}" + (f" ({expected})" if expected else "")
            found.append(_fault(task_file, places, tuple(parent), _under(parent, what)))
            continue
        found.append(_fault(task_file, places, loc, _bad_value(error)))
    return found


def _bad_value(error: ErrorDetails) -> str:
    """`<key>: expected <what the field's description says>, got <value>`, with a did-you-mean
    for a choice; pydantic's (or a validator's) words where the field has no description, the
    first letter lowered unless it starts an acronym ("MCP")."""
    loc, given = error["loc"], _shown(error["input"])
    key = ".".join(str(part) for part in loc)
    expected = _expected(loc)
    if expected is None:
        said = error["msg"].removeprefix("Value error, ")
        first = said[:1] if said[1:2].isupper() else said[:1].lower()
        return f"{key}: {first}{said[1:]}, got {given}"
    choices = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
    guess = did_you_mean(str(error["input"]), choices) if choices else None
    return f"{key}: expected {expected}, got {given}" + (
        f" (did you mean {guess!r}?)" if guess else ""
    )


def _under(parent: list[str | int], what: str) -> str:
    return f"{'.'.join(str(p) for p in parent)}: {what}" if parent else what


def _fault(
    task_file: Path,
    places: dict[yamlio.YamlPath, tuple[yamlio.Place, yamlio.Place]],
    loc: tuple[str | int, ...],
    what: str,
    *,
    key: bool = False,
) -> lint.Fault:
    """A fault at the key (`key`) or the value written at `loc`, or at the nearest enclosing
    value the file has (a list item pydantic names by index may be one scalar in the file)."""
    while loc not in places and loc:
        loc, key = loc[:-1], False
    key_place, value_place = places.get(loc, (None, None))
    place = key_place if key else value_place
    if place is None:
        return lint.Fault(task_file, None, what)
    return lint.Fault(task_file, place.line, what, place.column)


def _model_at(parent: tuple[str | int, ...] | list[str | int]) -> type[BaseModel] | None:
    """The model whose fields the mapping at `parent` holds (TaskSpec at the root, JudgeSpec in
    judges' items), or None when that place is no model's."""
    model: type[BaseModel] | None = TaskSpec
    for part in parent:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        model = _inner_model(model.model_fields[part].annotation)
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _inner_model(arg)) is not None:
            return found
    return None


def _fields(parent: tuple[str | int, ...] | list[str | int]) -> list[str]:
    model = _model_at(parent)
    return list(model.model_fields) if model else []


def _expected(loc: tuple[str | int, ...]) -> str | None:
    """What the field at `loc` expects, from its description; None for a list item or a field
    without one."""
    *parent, name = loc
    model = _model_at(parent)
    if isinstance(name, int) or model is None or name not in model.model_fields:
        return None
    return model.model_fields[name].description


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= SHOWN_INPUT_CHARS else shown[: SHOWN_INPUT_CHARS - 3] + "..."
