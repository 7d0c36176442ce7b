"""Optional SDKs: a feature whose SDK is missing stops with one line naming the extra to install.

The extras themselves are declared once, in pyproject.toml (`evalrun[docker]`, `[modal]`,
`[opik]`, `[agents]`, `[sweep]`, `[all]`). `require` checks that a module can be imported without
importing it, so it costs nothing on the paths that do not need the SDK.
"""

from __future__ import annotations

from importlib.util import find_spec

from evalrun.errors import UsageError


class MissingExtra(UsageError):
    """A feature was chosen whose SDK is not installed."""


def require(module: str, extra: str, feature: str) -> None:
    """Raise `MissingExtra` unless `module` is importable: "<feature> needs <module>: pip install
    'evalrun[<extra>]'"."""
    try:
        found = find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        found = False
    if not found:
        raise MissingExtra(f"{feature} needs the {module} package: pip install 'evalrun[{extra}]'")
