"""`evalrun docs [topic]`: the guides that ship inside evalrun, listed or printed.

A message that sends a user to a guide (how to write a verifier, which provider an agent speaks)
names `evalrun docs <topic>`, which works in every kind of install: a wheel has no repository
beside it, and a project's own folder has no docs/. The topics are the pages of docs/ (packaged
as evalrun/bundled/docs) by name, and `verifiers`: the bundled benchmark's guide to its format
and to writing a verifier (tasks/README.md).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.bundled import DOCS_DIR, TASKS_DIR
from evalrun.cli.arguments import CommandParser
from evalrun.config.usage import did_you_mean
from evalrun.errors import ExitCode, UsageError

VERIFIERS = "verifiers"  # the bundled benchmark's README: its format, writing a verifier


def topics() -> dict[str, Path]:
    """Topic -> the page that holds it, as installed."""
    pages = {page.stem: page for page in sorted(DOCS_DIR.glob("*.md"))}
    return {**pages, VERIFIERS: TASKS_DIR / "README.md"}


def docs_command(args: list[str], console: Console) -> int:
    """evalrun docs [topic]: list the topics with where each page is installed, or print one."""
    from evalrun.cli.install import home_line

    parser = CommandParser("docs", "The guides that ship with evalrun: list them, or print one.")
    parser.add_argument("topic", nargs="?", help="the guide to print (none: list them)")
    topic = parser.parse(args).topic
    pages = topics()
    if topic is None:
        width = max(len(name) for name in pages)
        for name, page in pages.items():
            line = f"{name:<{width}}  {_title(page)}  ({page})"
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        console.print(home_line(), highlight=False, markup=False, soft_wrap=True)
        return ExitCode.OK
    if topic not in pages:
        guess = did_you_mean(topic, pages)
        hint = f"did you mean {guess}? " if guess else ""
        raise UsageError(f"docs: no topic {topic!r}; {hint}(topics: {', '.join(pages)})")
    print(pages[topic].read_text(encoding="utf-8"), end="")
    return ExitCode.OK


def _title(page: Path) -> str:
    """The page's first heading, without its #s."""
    with page.open(encoding="utf-8") as text:
        heading = next((line for line in text if line.startswith("#")), page.stem)
    return heading.lstrip("#").strip()
