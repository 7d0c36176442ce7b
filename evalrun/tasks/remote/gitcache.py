"""Git checkouts of suites, cached by commit and shared by every run of this user.

```
<cache>/git/<repo-name>-<sha256(url)[:12]>/
    lock          flock: one process at a time fetches or checks out in this folder
    mirror.git/   a bare repository holding everything fetched from the URL
    refs.json     the tags and branches resolved so far: ref -> commit, kind, when
    <commit>/     a work tree at that commit (checked out under a temporary name, then renamed)
```

When the network is used (the rule the README states):

- a full 40-hex commit whose checkout (or objects) are cached never touches the network;
- a tag resolved once is served from `refs.json` from then on (tags are meant not to move;
  remove the cache folder to follow one that did);
- a branch (or no ref: the remote's default branch) is resolved again on every run; when the
  remote cannot be reached, the commit it last resolved to is served and a note says so.

Every checkout is verified before use: its HEAD must be the commit and its work tree clean (a
tracked file changed or a file added), else a `UsageError` names the folder and how to clear
it. Everything goes through the `git` command (`subprocess`), with prompts for credentials off.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evalrun.errors import UsageError
from evalrun.models.plan import Checkout

FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_ABBREVIATED = re.compile(r"^[0-9a-f]{4,40}$")
FETCH_TIMEOUT_S = 600.0
LOCAL_TIMEOUT_S = 120.0
DEFAULT_BRANCH = "HEAD"  # refs.json's key for "no ref given"
_FETCH_SPECS = (
    "+refs/heads/*:refs/heads/*",
    "+refs/tags/*:refs/tags/*",
    f"+{DEFAULT_BRANCH}:refs/evalrun/{DEFAULT_BRANCH}",
)


class GitFailed(Exception):
    """A `git` command exited non-zero (its last line of stderr is the message)."""


@dataclass(frozen=True)
class Served:
    """A verified checkout: its folder, what it is, and a note when it was served from the
    cache without asking the remote (a branch whose remote could not be reached)."""

    folder: Path
    checkout: Checkout
    note: str | None = None


def git(*args: str, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT_S) -> str:
    """Run `git args...`; its stdout, or `GitFailed`."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise UsageError("tasks_dir: a git reference needs the git command on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitFailed(f"git {args[0]} took longer than {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise GitFailed(_reason(done.stderr) or f"git {args[0]} exited {done.returncode}")
    return done.stdout


def _reason(stderr: str) -> str:
    """git's first `fatal:` (or `error:`) line, which says what went wrong; the lines after it
    are advice."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        for prefix in ("fatal: ", "error: "):
            if line.startswith(prefix):
                return line.removeprefix(prefix)
    return lines[-1] if lines else ""


class RepoCache:
    """The cache folder of one git URL (see the module docstring)."""

    def __init__(self, root: Path, url: str):
        self.url = url
        name = re.sub(r"[^\w.-]", "_", url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
        name = name.removesuffix(".git") or "repo"
        digest = hashlib.sha256(url.encode()).hexdigest()[:12]
        self.folder = root / "git" / f"{name}-{digest}"
        self.mirror = self.folder / "mirror.git"
        self.refs_file = self.folder / "refs.json"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this URL's lock (blocking): two runs never fetch or check out at once."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def serve(self, ref: str | None, asked: str) -> Served:
        """The verified checkout of `ref` (None: the default branch); `asked` names the
        reference in errors. Raises `UsageError` for a ref the remote does not have, a remote
        that cannot be reached with nothing cached, or a changed checkout."""
        with self.locked():
            key = ref or DEFAULT_BRANCH
            recorded = self._records().get(key)
            if ref and FULL_COMMIT.match(ref) and self._has_commit(ref):
                return self._served(ref, ref)
            if recorded and recorded["kind"] == "tag":
                return self._served(recorded["commit"], ref)
            try:
                self._fetch()
            except GitFailed as exc:
                return self._offline(ref, recorded, asked, str(exc))
            commit, kind = self._lookup(ref, asked)
            if kind != "commit":
                self._record(key, commit, kind)
            return self._served(commit, ref)

    def _offline(
        self, ref: str | None, recorded: dict[str, Any] | None, asked: str, reason: str
    ) -> Served:
        if recorded is None:
            raise UsageError(
                f"tasks_dir: {asked}: cannot fetch {self.url} ({reason}), and "
                f"{ref or 'its default branch'} was never resolved into the cache {self.folder}"
            )
        what = f"branch {ref}" if ref else "the default branch"
        note = (
            f"{what} of {self.url} was not re-resolved ({reason}); served from the cache as "
            f"commit {recorded['commit'][:12]}, as resolved {recorded['resolved_at']}"
        )
        served = self._served(recorded["commit"], ref)
        return Served(served.folder, served.checkout, note)

    def _served(self, commit: str, ref: str | None) -> Served:
        folder = self.folder / commit
        if not folder.is_dir():
            self._check_out(commit, folder)
        verify(folder, commit)
        return Served(folder, Checkout(url=self.url, commit=commit, ref=ref))

    def _fetch(self) -> None:
        if not self.mirror.is_dir():
            tmp = self.folder / f".mirror-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            git("init", "--quiet", "--bare", str(tmp))
            os.rename(tmp, self.mirror)
        self._git_fetch("--prune", self.url, *_FETCH_SPECS)

    def _git_fetch(self, *args: str) -> None:
        git("fetch", "--quiet", *args, cwd=self.mirror, timeout=FETCH_TIMEOUT_S)

    def _has_commit(self, commit: str) -> bool:
        if (self.folder / commit).is_dir():
            return True
        if not self.mirror.is_dir():
            return False
        try:
            git("cat-file", "-e", f"{commit}^{{commit}}", cwd=self.mirror)
        except GitFailed:
            return False
        return True

    def _lookup(self, ref: str | None, asked: str) -> tuple[str, str]:
        """(commit, kind) of `ref` in the freshly fetched mirror; kind: tag, branch, default
        or commit. A full commit no branch or tag reaches is fetched by itself."""
        candidates = [(f"refs/evalrun/{DEFAULT_BRANCH}", "default")]
        if ref is not None:
            candidates = [(f"refs/tags/{ref}", "tag"), (f"refs/heads/{ref}", "branch")]
            if _ABBREVIATED.match(ref):
                candidates.append((ref, "commit"))
        for name, kind in candidates:
            try:
                commit = git(
                    "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", cwd=self.mirror
                ).strip()
            except GitFailed:
                continue
            git("update-ref", f"refs/evalrun/commits/{commit}", commit, cwd=self.mirror)
            return commit, kind
        if ref is not None and FULL_COMMIT.match(ref):
            try:
                self._git_fetch(self.url, f"{ref}:refs/evalrun/commits/{ref}")
                return ref, "commit"
            except GitFailed:
                pass
        raise UsageError(
            f"tasks_dir: {asked}: {self.url} has no tag, branch or commit {ref!r}"
            if ref
            else f"tasks_dir: {asked}: {self.url} has no default branch",
            hint=self._known_refs(),
        )

    def _known_refs(self) -> str:
        listed = git(
            "for-each-ref", "--format=%(refname)", "refs/tags", "refs/heads", cwd=self.mirror
        ).split()
        tags = [r.removeprefix("refs/tags/") for r in listed if r.startswith("refs/tags/")]
        heads = [r.removeprefix("refs/heads/") for r in listed if r.startswith("refs/heads/")]
        return f"tags: {', '.join(tags) or '(none)'}; branches: {', '.join(heads) or '(none)'}"

    def _check_out(self, commit: str, folder: Path) -> None:
        """A work tree at `commit`, made under a temporary name and renamed into place, so a
        half-made checkout (a crash, a full disk) never carries a commit's name."""
        tmp = self.folder / f".checkout-{commit[:12]}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        git("clone", "--quiet", "--no-checkout", str(self.mirror), str(tmp))
        git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit, cwd=tmp)
        os.rename(tmp, folder)

    def _records(self) -> dict[str, dict[str, Any]]:
        try:
            found = json.loads(self.refs_file.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def _record(self, key: str, commit: str, kind: str) -> None:
        records = self._records()
        when = datetime.now().astimezone().isoformat(timespec="seconds")
        records[key] = {"commit": commit, "kind": kind, "resolved_at": when}
        tmp = self.refs_file.with_suffix(f".json.{os.getpid()}")
        tmp.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.refs_file)


def verify(folder: Path, commit: str) -> None:
    """A `UsageError` naming `folder` unless it is a clean work tree at `commit`."""
    try:
        head = git("rev-parse", "HEAD", cwd=folder).strip()
        changed = git("status", "--porcelain", "--untracked-files=normal", cwd=folder).split("\n")
    except GitFailed as exc:
        head, changed = f"unreadable ({exc})", []
    changed = [line[3:] for line in changed if line.strip()]
    if head != commit:
        problem = f"is at {head}, not commit {commit}"
    elif changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        problem = f"has local changes ({', '.join(changed[:3])}{more})"
    else:
        return
    raise UsageError(
        f"tasks_dir: the cached checkout {folder} {problem}; refusing to run a suite that is "
        "not the commit it claims to be",
        hint=f"remove it and it is checked out afresh on the next run: rm -rf {folder}",
    )
