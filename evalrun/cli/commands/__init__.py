"""The subcommands, one module per subcommand (or per small family): `evalrun <command> [args]`.

Each command is a function `(args, console) -> exit code`: it parses its own arguments
(`evalrun.cli.arguments.CommandParser`), composes the config where it needs one
(`evalrun.cli.hydra.compose_config`), calls plain functions of the packages below the CLI and
prints through `evalrun.report` or the console. `evalrun.cli.main.COMMANDS` names them all. A
command imports what it works with inside its function, so that `evalrun` starts without loading
every command's dependencies (the Opik integration above all).

```
check.py     check                    prove every verifier honest (gold, untouched, wrong/*, hacks)
runs.py      ls, show, report         look at runs that already happened
diff.py      diff                     compare two runs
regrade.py   regrade                  grade a past run's kept workspaces again, into a new run
gate.py      gate                     gate a run that has ended on a threshold profile
power.py     power                    how precise a run will be, how many tasks x trials it needs
setup.py     setup docker, image      the one-time system pieces of sandbox=docker
scaffold.py  init, new-task           a starter project, a task folder to fill in
info.py      info                     install, project, search path, where each option comes from
agents.py    agents install|list      the agent CLI cache
push.py      push, sync               send a run or a suite to Opik
online.py    online [rule]            judge a live Opik project's conversations
```
"""
