"""The command line: the entry point and the table of subcommands (`main`), all Hydra glue
(`hydra`: composing the config, a run through `@hydra.main`), one module per subcommand
(`commands`), argument parsing and one-line usage errors (`arguments`, `usage`, `help_page`), the
sweep's Hydra callback (`callbacks`), `--version` and the set-up scripts (`install`), and what
`evalrun init` / `new-task` write (`scaffold`)."""
