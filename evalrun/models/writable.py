"""Whatever an agent shaped can be written: the one place a record is made safe to serialise,
so the store, the trackers and the reports all get the same record.

Much of a `SampleRecord` is the agent's doing: its output, its trajectory (a Python agent fills
`ToolCall.args` with anything it likes), the file names of the workspace diff, text it got
echoed into the verifier's output or an error message. Left alone, any of it can stop a JSON
writer: a lone surrogate (an undecodable byte carried by Python's `surrogateescape`) cannot be
encoded as UTF-8; a dict 10,000 levels deep passes pydantic's serialisation depth (and one 200
deep is written but can no longer be read back); a value of a type JSON has no form for cannot
be written at all; a gigabyte string fills the disk. DESIGN.md's threat model, rule 2: nothing
the agent shapes may make a record unwritable or lose another sample's record.

`writable(record)` returns a copy in which:

- every string is valid Unicode: an undecodable byte (U+DC80-U+DCFF) is written `\\xNN`, any
  other lone surrogate `\\uXXXX`;
- a container that would sit more than `MAX_DEPTH` levels deep in the record's JSON is
  replaced by a note;
- a list or mapping keeps its first `MAX_ITEMS` entries, with a note;
- a string keeps its last `MAX_TEXT` characters, marked (fields with their own, smaller bound -
  the agent's output, the diffs, the verifier's output - are untouched by this one);
- a value JSON has no form for (bytes, a set, an object) becomes text;
- when all that is still more than `MAX_RECORD_CHARS`, every string is cut to `TIGHT_TEXT` and
  every container to `TIGHT_ITEMS`, and the reason says so; past that, the cell's `minimal`
  record is what is written.

Every cut leaves a note where it was made (in the text, the container, or the record's reason
for a list of steps, which has no room for one). `minimal(record, why)` is the last resort of
`RunStore.append`: the same cell and outcome, nothing the agent shaped, and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel

MAX_DEPTH = 40  # levels of a record's JSON; pydantic reads one back up to 200
ARGS_DEPTH = 4  # how deep a trajectory step's args sit in a record
MAX_ITEMS = 10_000
MAX_TEXT = 1_000_000
MAX_RECORD_CHARS = 32_000_000
TIGHT_TEXT = 4_000
TIGHT_ITEMS = 100
REASON_CHARS = 2_000  # a minimal record's reason

_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """`text` as valid Unicode: each undecodable byte as `\\xNN`, another lone surrogate as
    `\\uXXXX`. Text without any is returned as it is."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    point = ord(match.group())
    return f"\\x{point - 0xDC00:02x}" if 0xDC80 <= point <= 0xDCFF else f"\\u{point:04x}"


class _OverBudget(Exception):
    """The record holds more than the walk's budget of characters."""


class _Walk:
    """One pass over a record: a bounded, writable copy of each value."""

    def __init__(self, text_max: int, items_max: int):
        self.text_max = text_max
        self.items_max = items_max
        self.chars = 0
        self.notes: list[str] = []

    def spend(self, chars: int) -> None:
        self.chars += chars
        if self.chars > MAX_RECORD_CHARS:
            raise _OverBudget

    def value(self, value: Any, depth: int, where: str) -> Any:
        self.spend(1)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int) and not -(2**63) <= value < 2**64:
            return self.text(_describe(value))  # past what a JSON reader takes as a number
        if value is None or isinstance(value, bool | int | float):
            return value
        if depth >= MAX_DEPTH:
            return f"[nested more than {MAX_DEPTH} levels deep: not recorded]"
        if isinstance(value, BaseModel):
            return self.model(value, depth + 1)
        if isinstance(value, Mapping):
            return self.mapping(value, depth + 1)
        if isinstance(value, list | tuple | set | frozenset):
            return self.sequence(list(value), depth + 1, where)
        if isinstance(value, bytes | bytearray):
            return self.text(bytes(value).decode("utf-8", "backslashreplace"))
        return self.text(_describe(value))

    def text(self, text: str) -> str:
        if len(text) > self.text_max:
            text = tail_text(text, self.text_max)
        self.spend(len(text))
        return escape_surrogates(text)

    def model(self, model: BaseModel, depth: int) -> BaseModel:
        values = {
            name: self.value(getattr(model, name), depth, name) for name in type(model).model_fields
        }
        return type(model).model_construct(_fields_set=model.model_fields_set, **values)

    def mapping(self, mapping: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        out = {}
        for n, (key, item) in enumerate(mapping.items()):
            if n == self.items_max:
                out["[evalrun]"] = f"{len(mapping) - n} more entries not recorded"
                break
            name = self.text(key if isinstance(key, str) else _describe(key))
            out[name] = self.value(item, depth, name)
        return out

    def sequence(self, items: list[Any], depth: int, where: str) -> list[Any]:
        out = [self.value(item, depth, where) for item in items[: self.items_max]]
        left = len(items) - len(out)
        if left and all(isinstance(item, BaseModel) for item in out):
            self.notes.append(f"{where}: the last {left} of {len(items)} not recorded")
        elif left:
            out.append(f"[{left} more items not recorded]")
        return out


def _describe(value: Any) -> str:
    """Text for a value JSON has no form for: its repr, bounded, or its type's name."""
    try:
        return tail_text(repr(value), TIGHT_TEXT)
    except Exception:  # a repr that raises or recurses
        return f"<{type(value).__name__}>"


def bounded_args(args: Mapping[Any, Any]) -> dict[str, Any]:
    """A trajectory step's args, bounded as `writable` would bound them in its record - done
    when the step is made, so a log or a report can print them too."""
    done = within_budget(args, ARGS_DEPTH)
    if done is None:
        return {"[evalrun]": f"args of more than {MAX_RECORD_CHARS:,} characters: not recorded"}
    return cast(dict[str, Any], done[0])


def within_budget(value: Any, depth: int) -> tuple[Any, list[str]] | None:
    """`value` walked with the loose bounds, else the tight ones (noted); None when even those
    leave more than `MAX_RECORD_CHARS`."""
    for text_max, items_max in ((MAX_TEXT, MAX_ITEMS), (TIGHT_TEXT, TIGHT_ITEMS)):
        walk = _Walk(text_max, items_max)
        try:
            clean = walk.value(value, depth, "record")
        except _OverBudget:
            continue
        if text_max == TIGHT_TEXT:
            walk.notes.append(f"over {MAX_RECORD_CHARS:,} characters: every text cut")
        return clean, walk.notes
    return None


def tail_text(text: str, limit: int = 4000) -> str:
    """The last `limit` characters of `text`, marked when cut."""
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} chars omitted ...]\n" + text[-limit:]
