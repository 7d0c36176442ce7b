"""Usage errors at the command line's one seam: every mistake said in one line, with a fix.

Three checks run before Hydra sees the arguments (`check_args`): a bare word where a command or
an override belongs, an option flag Hydra does not know, and a typed schema (`*_schema`, the
ConfigStore entries each group's options start from) named as if it were an option:

```
error: unknown command 'chek'; did you mean check?
error: unknown option '--mutlirun' (did you mean --multirun?)
```

What Hydra and OmegaConf raise while composing is translated by `evalrun.config.usage`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from evalrun.config.usage import did_you_mean, refuse_schema_options
from evalrun.console import make_console, styled
from evalrun.errors import UsageError

# Hydra's own flags (hydra/_internal/utils.py get_args_parser), and whether each takes a value.
HYDRA_FLAGS = {
    "--help": False,
    "-h": False,
    "--hydra-help": False,
    "--version": False,
    "-V": False,
    "--cfg": True,
    "-c": True,
    "--resolve": False,
    "--package": True,
    "-p": True,
    "--run": False,
    "-r": False,
    "--multirun": False,
    "-m": False,
    "--shell-completion": False,
    "-sc": False,
    "--config-path": True,
    "-cp": True,
    "--config-name": True,
    "-cn": True,
    "--config-dir": True,
    "-cd": True,
    "--experimental-rerun": True,
    "--info": False,  # its value is optional (`--info searchpath`): a bare word after it is fine
    "-i": False,
}
FLAG_CHOICES = {"--cfg": ("job", "hydra", "all"), "-c": ("job", "hydra", "all")}
INFO_TOPICS = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")


def print_error(exc: BaseException) -> None:
    """One line on stderr (and a hint line when there is one); the message is text, not markup
    (`pip install 'evalrun[docker]'`)."""
    err = make_console(stderr=True, soft_wrap=True)
    err.print(styled("[red]error:[/]"), str(exc))
    hint = getattr(exc, "hint", None)
    if hint:
        err.print(styled("[dim]hint:[/]"), hint)


# --- before Hydra ----------------------------------------------------------------------------
def unknown_command(word: str, commands: Iterable[str]) -> UsageError:
    """A bare first word that is no command: the closest command, or what to type instead."""
    guess = did_you_mean(word, commands)
    if guess:
        return UsageError(f"unknown command '{word}'; did you mean {guess}?")
    hint = "commands: " + ", ".join(sorted(commands)) + "; a run takes key=value overrides"
    if os.path.isdir(word):
        from evalrun.rundir.log import is_run_dir

        looking = "show" if is_run_dir(Path(word)) else "ls"
        hint = f"to look at runs: evalrun {looking} {word}"
    return UsageError(f"unknown command '{word}'", hint=hint)


def unknown_option(arg: str, after: Sequence[str]) -> UsageError:
    """`--profile regression` or `--trials=3` (an override written as a flag, as other CLIs
    take them): `did you mean profile=regression?`; else the nearest flag Hydra knows."""
    from evalrun.config.schema import EvalConfig

    flag, equals, value = arg.partition("=")
    key = flag.lstrip("-").replace("-", "_")
    if key in EvalConfig.__dataclass_fields__ and not key.startswith("_"):
        if not equals:
            value = (
                after[0]
                if after and not after[0].startswith("-") and "=" not in after[0]
                else "..."
            )
        guess: str | None = f"{key}={value}"
    else:
        guess = did_you_mean(flag, [f for f in HYDRA_FLAGS if f.startswith("--")])
    tail = f" (did you mean {guess}?)" if guess else ""
    return UsageError(f"unknown option '{flag}'{tail}", hint="evalrun --help lists the options")


def check_args(args: Sequence[str], commands: Iterable[str]) -> tuple[list[str], list[str]]:
    """Refuse, before Hydra parses them, arguments of a run that cannot mean anything: a bare
    word (a misspelt command or a missing `=`), an unknown flag, a schema named as an option.
    Returns Hydra's flags (with their values) and the overrides apart: Hydra's parser takes no
    flag after an override, so flags go first (`evalrun tasks_dir=x -m tags=a,b` means what it
    says)."""
    expects_value = ""  # the flag whose value comes next
    flags: list[str] = []
    overrides: list[str] = []
    for index, arg in enumerate(args):
        if expects_value:
            choices = FLAG_CHOICES.get(expects_value)
            if choices and arg not in choices:
                raise UsageError(f"{expects_value} {arg}: expected one of {', '.join(choices)}")
            expects_value = ""
            flags.append(arg)
            continue
        if arg.startswith("-"):
            flags.append(arg)
            flag = arg.split("=", 1)[0]
            if flag not in HYDRA_FLAGS:
                raise unknown_option(arg, args[index + 1 : index + 2])
            expects_value = flag if HYDRA_FLAGS[flag] and "=" not in arg else ""
            continue
        if "=" in arg or arg.startswith("~"):
            overrides.append(arg)
            continue
        if index and args[index - 1] in ("--info", "-i") and arg in INFO_TOPICS:
            flags.append(arg)
            continue
        if index == 0:
            raise unknown_command(arg, commands)
        raise UsageError(
            f"'{arg}' is not an override: expected key=value",
            hint="e.g. evalrun trials=3 tags=python; quote values with spaces or brackets",
        )
    if expects_value:
        raise UsageError(f"{expects_value} needs a value", hint="evalrun --help lists the options")
    refuse_schema_options(overrides)
    return flags, overrides
