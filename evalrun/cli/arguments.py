"""The arguments of `evalrun <command>`: one argparse parser per subcommand.

Subcommands mix three kinds of words, in any order: options (`--json`, `--delta 0.1`),
positionals (a run directory, a task name) and - where the command composes the config - Hydra
overrides (`profile=regression`, `tracker.project=x`). `CommandParser.parse` takes the overrides
out first (a word with `=` that is not an option and not an option's value), then argparse parses
the rest, options interleaved with positionals.

A mistake is a `UsageError` (one line on stderr, exit 2) naming what was wrong and the usage
line; `--help` prints the command's help and exits 0. Help and usage go through the console seam
(`evalrun.console`), like every other line evalrun prints.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from evalrun.console import make_console
from evalrun.errors import UsageError

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


class CommandParser(argparse.ArgumentParser):
    """The parser of one subcommand. `overrides=True`: Hydra overrides are accepted anywhere on
    the line and land in `namespace.overrides` (a list, in the order given)."""

    def __init__(
        self,
        command: str,
        description: str,
        *,
        overrides: bool = False,
        epilog: str | None = None,
    ):
        super().__init__(
            prog=f"evalrun {command}",
            description=description,
            epilog=epilog,
            allow_abbrev=False,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.overrides = overrides
        self._takes_value: set[str] = set()
        self._listed_overrides = False

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if action.option_strings and action.nargs != 0:
            self._takes_value.update(action.option_strings)
        return action

    def add_runs_dir(self) -> None:
        """The optional `runs_dir` positional of the commands over a folder of runs (`root`)."""
        from evalrun.rundir.log import RUNS_DIR

        self.add_argument(
            "root",
            metavar="runs_dir",
            nargs="?",
            type=Path,
            default=RUNS_DIR,
            help=f"a folder of runs (default: {RUNS_DIR}/)",
        )

    def parse(self, args: Sequence[str]) -> argparse.Namespace:
        """Parse `args`; `UsageError` on a mistake (unknown option, missing positional, ...)."""
        words: list[str] = []
        overrides: list[str] = []
        previous = ""
        for word in args:
            is_value = previous in self._takes_value
            if self.overrides and not is_value and "=" in word and not word.startswith("-"):
                overrides.append(word)
            else:
                words.append(word)
            previous = word
        if self.overrides and not self._listed_overrides:
            # listed last, for the usage line and --help; the words were taken out above, so
            # whatever argparse puts here is a positional too many
            self.add_argument(
                "stray",
                nargs="*",
                default=[],
                metavar="key=value",
                help="Hydra overrides of the config",
            )
            self._listed_overrides = True
        namespace, extra = self.parse_known_intermixed_args(words)
        extra = [*getattr(namespace, "stray", []), *extra]
        if extra:
            first = extra[0]
            what = "unknown option" if first.startswith("-") else "unexpected argument"
            self.error(f"{what} {first!r}")
        namespace.overrides = overrides
        namespace.__dict__.pop("stray", None)
        return namespace

    def error(self, message: str) -> NoReturn:
        usage = " ".join(self.format_usage().split())
        raise UsageError(f"{self.prog}: {message} ({usage})")

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        make_console(soft_wrap=True).print(self.format_help().rstrip("\n"))

    def print_usage(self, file: SupportsWrite[str] | None = None) -> None:
        make_console(soft_wrap=True).print(self.format_usage().rstrip("\n"))
