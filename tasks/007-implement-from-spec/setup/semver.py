"""Version parsing and comparison for the release tooling. See SPEC.md."""
from typing import NamedTuple


class Version(NamedTuple):
    major: int
    minor: int
    patch: int
    prerelease: tuple = ()  # numeric identifiers as int, others as str
    build: tuple = ()       # always str

    def __str__(self):
        """Canonical form, e.g. '1.2.3-rc.1+build.7'."""
        raise NotImplementedError


def parse(text):
    """Parse a version string into a Version. See SPEC.md."""
    raise NotImplementedError


def compare(a, b):
    """Return -1, 0 or 1 as a is lower than, equal to or higher than b."""
    raise NotImplementedError


def max_version(versions, include_prerelease=False):
    """Return the highest valid version string from versions, or None."""
    raise NotImplementedError
