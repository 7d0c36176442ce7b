"""Subcommand arguments (evalrun/cli/arguments.py): every command has a working --help, overrides go
anywhere on the line, and a mistake is one usage error (exit 2) naming it."""

from __future__ import annotations

import pytest

from evalrun.cli.arguments import CommandParser
from evalrun.cli.main import COMMANDS, main
from evalrun.errors import UsageError


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


@pytest.mark.parametrize("command", [*sorted(COMMANDS), "online rule"])
def test_every_subcommand_has_a_help_page(capsys, command):
    code, out, _ = run(capsys, *command.split(), "--help")
    assert code == 0
    assert out.startswith(f"usage: evalrun {command} ")
    assert "-h, --help" in out


def test_overrides_and_options_go_anywhere_on_the_line():
    parser = CommandParser("gate", "test", overrides=True)
    parser.add_argument("run_dir")
    parser.add_argument("--allow-partial", action="store_true")
    parser.add_argument("--html")
    options = parser.parse(["profile=x", "--allow-partial", "runs/a", "baseline=b"])
    assert (options.run_dir, options.allow_partial) == ("runs/a", True)
    assert options.overrides == ["profile=x", "baseline=b"]
    # an option's value is never taken for an override
    assert parser.parse(["runs/a", "--html", "a=b.html"]).html == "a=b.html"


def test_a_mistake_is_one_usage_error_with_the_usage_line(capsys):
    code, _, err = run(capsys, "diff", "runs/a", "runs/b", "--jsn")
    assert code == 2
    assert err.count("\n") == 1
    assert "unknown option '--jsn'" in err and "usage: evalrun diff" in err
    code, _, err = run(capsys, "gate", "runs/a", "runs/b")
    assert code == 2 and "unexpected argument 'runs/b'" in err


def test_a_command_without_overrides_refuses_one():
    parser = CommandParser("diff", "test")
    parser.add_argument("run_a")
    with pytest.raises(UsageError, match="unexpected argument 'x=1'"):
        parser.parse(["runs/a", "x=1"])
