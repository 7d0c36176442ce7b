"""The command line: the entry point (`main`), argument parsing and one-line usage errors
(`arguments`, `usage`, `help_page`), Hydra sweep callbacks, `--version` and set-up (`install`),
and `evalrun init` / `new-task` (`scaffold`)."""
