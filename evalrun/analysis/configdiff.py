"""Dotted-key diffs of resolved configs: for resume refusals and `evalrun diff`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Knobs that cannot change a sample's result: a resumed run may change them freely.
NOT_RESULT_RELEVANT = (
    "concurrency",
    "tracker",
    "run_dir",
    "dry_run",
    "keep_workspaces",
    "final_workspaces",  # what is kept for a regrade, never what a sample does
    "max_retries",
    "retry_backoff_s",
    "name",
    "profile",
    "baseline",
    "strict_formats",  # decides which folders load, never what a loaded task's sample does
    "budget.run_usd",  # a run stopped at its cap resumes with a higher one
    "agent.budget.run_usd",
    "agent.auto_install",
    "tasks_ref",  # where references resolve from; what they resolved to is compared on its own
)


def under(key: str, prefixes: Iterable[str]) -> bool:
    """Whether dotted `key` is one of `prefixes` or lies below one (`agent.env.X` under `agent`)."""
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}, 'c': [1, 2]} -> {'a.b': 1, 'c': [1, 2]} (lists are leaves)."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(flatten(inner, f"{prefix}{key}."))
        if not value and prefix:
            flat[prefix[:-1]] = {}
        return flat
    return {prefix[:-1]: value}


@dataclass
class ConfigDiff:
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    added: dict[str, Any] = field(default_factory=dict)
    removed: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def lines(self) -> list[str]:
        out = [f"  {k}: {a!r} -> {b!r}" for k, (a, b) in sorted(self.changed.items())]
        out += [f"  + {k}: {v!r}" for k, v in sorted(self.added.items())]
        out += [f"  - {k}: {v!r}" for k, v in sorted(self.removed.items())]
        return out


def diff(a: dict[str, Any], b: dict[str, Any], ignore: tuple[str, ...] = ()) -> ConfigDiff:
    """What changed from `a` to `b`, skipping keys equal to or under any `ignore` prefix."""
    fa, fb = flatten(a), flatten(b)
    result = ConfigDiff()
    for key in sorted(set(fa) | set(fb)):
        if under(key, ignore):
            continue
        if key not in fb:
            result.removed[key] = fa[key]
        elif key not in fa:
            result.added[key] = fb[key]
        elif fa[key] != fb[key]:
            result.changed[key] = (fa[key], fb[key])
    return result
