"""`safe_load` for the YAML files evalrun reads (task.yaml, probes, judges, a run's config): the
libyaml parser when PyYAML was built with it (a suite's task files parse about 15x faster, which
is most of a dry run's task loading), and on an error the pure-Python parser again, whose message
quotes the line with a caret under the fault. The same safe constructors either way.

For messages that point into a file (`task.yaml:6:7: ...`): `places` says where each value of a
document is written, from the composer's node marks, and `syntax_problem` puts a parse error in
one line with its place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """As `yaml.safe_load(text)`; raises `yaml.YAMLError` with the pure-Python parser's message."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)


@dataclass(frozen=True)
class Place:
    """Where a node of a YAML document starts: 1-based line and column, as editors count."""

    line: int
    column: int

    @classmethod
    def of(cls, mark: yaml.Mark) -> Place:
        return cls(mark.line + 1, mark.column + 1)


YamlPath = tuple[str | int, ...]


def places(text: str) -> dict[YamlPath, tuple[Place, Place]]:
    """Where each value of the document `text` is written, by its path of keys and list indices
    (the root is `()`): (where its key starts, where the value starts); for a list item and the
    root both are the value's place. For errors that point into a file the loader already
    parsed; raises `yaml.YAMLError` on text that does not parse."""
    found: dict[YamlPath, tuple[Place, Place]] = {}
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is None:
        return found
    pending: list[tuple[YamlPath, yaml.Node, Place]] = [((), root, Place.of(root.start_mark))]
    while pending:
        path, node, key_place = pending.pop()
        found[path] = (key_place, Place.of(node.start_mark))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                pending.append(((*path, str(key.value)), value, Place.of(key.start_mark)))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                pending.append(((*path, index), item, Place.of(item.start_mark)))
    return found


def syntax_problem(error: yaml.YAMLError) -> tuple[str, Place | None]:
    """A YAML error in one line, with where it is: `found unexpected end of stream (while
    scanning a quoted scalar at 2:9)` and the problem's place (None when the error has none)."""
    if not isinstance(error, yaml.MarkedYAMLError):
        return str(error).strip(), None
    problem = error.problem or "cannot parse"
    if error.context and error.context_mark is not None:
        started = Place.of(error.context_mark)
        problem += f" ({error.context} at {started.line}:{started.column})"
    mark = error.problem_mark or error.context_mark
    return problem, Place.of(mark) if mark is not None else None
