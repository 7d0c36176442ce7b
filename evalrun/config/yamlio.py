"""`safe_load` for the YAML files evalrun reads (task.yaml, probes, judges, a run's config): the
libyaml parser when PyYAML was built with it (a suite's task files parse about 15x faster, which
is most of a dry run's task loading), and on an error the pure-Python parser again, whose message
quotes the line with a caret under the fault. The same safe constructors either way."""

from __future__ import annotations

from typing import Any

import yaml

_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """As `yaml.safe_load(text)`; raises `yaml.YAMLError` with the pure-Python parser's message."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)
