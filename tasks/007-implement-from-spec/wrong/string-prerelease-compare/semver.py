"""Version parsing and comparison for the release tooling. See SPEC.md."""
import re
from typing import NamedTuple

_NUM = r"0|[1-9][0-9]*"
_IDENT = r"[0-9A-Za-z-]+"
_VERSION_RE = re.compile(
    rf"v?(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_IDENT}(?:\.{_IDENT})*))?"
    rf"(?:\+(?P<build>{_IDENT}(?:\.{_IDENT})*))?"
)


class Version(NamedTuple):
    major: int
    minor: int
    patch: int
    prerelease: tuple = ()  # numeric identifiers as int, others as str
    build: tuple = ()       # always str

    def __str__(self):
        """Canonical form, e.g. '1.2.3-rc.1+build.7'."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _prerelease_identifier(ident, text):
    if ident.isdigit() and ident.isascii():
        if len(ident) > 1 and ident[0] == "0":
            raise ValueError(f"numeric prerelease identifier with leading zero in {text!r}")
    return ident


def parse(text):
    """Parse a version string into a Version. See SPEC.md."""
    if not isinstance(text, str):
        raise TypeError(f"version must be a str, not {type(text).__name__}")
    match = _VERSION_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"invalid version: {text!r}")
    pre = match["pre"]
    build = match["build"]
    return Version(
        int(match["major"]),
        int(match["minor"]),
        int(match["patch"]),
        tuple(_prerelease_identifier(p, text) for p in pre.split(".")) if pre else (),
        tuple(build.split(".")) if build else (),
    )


def _as_version(value):
    return value if isinstance(value, Version) else parse(value)


def _cmp(x, y):
    return (x > y) - (x < y)


def _compare_prerelease(a, b):
    if not a or not b:
        # A release (no prerelease) is higher than any prerelease.
        return _cmp(not a, not b)
    for x, y in zip(a, b):
        x_num, y_num = isinstance(x, int), isinstance(y, int)
        if x_num and y_num or not x_num and not y_num:
            result = _cmp(x, y)
        else:
            result = -1 if x_num else 1
        if result:
            return result
    return _cmp(len(a), len(b))


def compare(a, b):
    """Return -1, 0 or 1 as a is lower than, equal to or higher than b."""
    a, b = _as_version(a), _as_version(b)
    return (_cmp((a.major, a.minor, a.patch), (b.major, b.minor, b.patch))
            or _compare_prerelease(a.prerelease, b.prerelease))


def max_version(versions, include_prerelease=False):
    """Return the highest valid version string from versions, or None."""
    best_text, best = None, None
    for text in versions:
        try:
            version = parse(text)
        except (TypeError, ValueError):
            continue
        if version.prerelease and not include_prerelease:
            continue
        if best is None or compare(version, best) > 0:
            best_text, best = text, version
    return best_text
