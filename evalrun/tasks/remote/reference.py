"""What a `tasks_dir=` value names: a folder on disk, a git reference or a registry dataset.

```
git+<url>[@<ref>][#<sub/folder>]   url: file://, http(s)://, ssh://, user@host:path or a local path
                                   ref: a tag, branch or commit (none: the remote's default branch)
<name>@<version>                   a dataset of the registry (`tasks_ref.registry`), e.g.
                                   terminal-bench@2.0
anything else                      a folder
```

A `@` belongs to the ref only where a ref can sit: after the host of a `scheme://host/...` URL
and after the `:` of an scp-like `user@host:path`, so `git+ssh://git@host/repo` has no ref. A
value that names an existing folder is that folder, even when it looks like `name@version`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import UsageError

GIT_PREFIX = "git+"
_REGISTRY_NAME = re.compile(r"^(?P<name>[A-Za-z0-9][\w.-]*)@(?P<version>[\w.+-]+)$")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")


@dataclass(frozen=True)
class GitReference:
    """`git+<url>@<ref>#<subdir>`: `url` as git takes it (a local path made absolute)."""

    text: str
    url: str
    ref: str | None
    subdir: str


@dataclass(frozen=True)
class RegistryReference:
    """`<name>@<version>`: a dataset of the registry."""

    text: str
    name: str
    version: str


def parse(value: str) -> GitReference | RegistryReference | None:
    """The reference `value` names, or None for a folder (left to the loader to check)."""
    if value.startswith(GIT_PREFIX):
        return parse_git(value)
    match = _REGISTRY_NAME.match(value)
    if match and not Path(value).expanduser().exists():
        return RegistryReference(value, match["name"], match["version"])
    return None


def parse_git(value: str) -> GitReference:
    """Split `git+<url>@<ref>#<subdir>`; a `UsageError` naming the value when it has no URL
    or its sub-folder leaves the checkout."""
    body = value[len(GIT_PREFIX) :]
    body, _, subdir = body.partition("#")
    subdir = subdir.strip("/")
    if subdir and (Path(subdir).is_absolute() or ".." in Path(subdir).parts):
        raise UsageError(f"tasks_dir: {value!r}: the sub-folder after # must stay inside the repo")
    ref_from = _ref_search_start(body)
    at = body.rfind("@", ref_from)
    url, ref = (body[:at], body[at + 1 :]) if at >= 0 else (body, None)
    if not url or ref == "":
        raise UsageError(
            f"tasks_dir: {value!r} is not a git reference",
            hint="write git+<url>@<tag, branch or commit>#<sub/folder> (the @ref and #folder "
            "are optional)",
        )
    return GitReference(value, _absolute(url), ref, subdir)


def _ref_search_start(url: str) -> int:
    """Where in `url` a ref's `@` may start: past the host of a URL with a scheme, past the
    `:` of an scp-like address, anywhere in a path."""
    scheme = url.find("://")
    if scheme >= 0:
        slash = url.find("/", scheme + 3)
        return len(url) if slash < 0 else slash
    if _SCP_LIKE.match(url):
        return url.index(":")
    return 0


def _absolute(url: str) -> str:
    """A local path as an absolute one (the cache is shared by runs started anywhere)."""
    if "://" in url or _SCP_LIKE.match(url):
        return url
    return str(Path(url).expanduser().resolve())
