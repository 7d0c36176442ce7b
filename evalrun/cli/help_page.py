"""`evalrun --help`: evalrun's help page, composed once and fast.

The page Hydra prints for `--help` (header, `== Configuration groups ==`, `== Config ==`, footer,
from `hydra.help` in conf/config.yaml), built here instead: Hydra lists a group's options by
rebuilding its config repository for every group it knows (its own included) - most of the
time of `--help` - and lists the typed `*_schema` nodes of the ConfigStore beside the options a
user picks. Here the options are the YAML files of each group folder on evalrun's search path
(the packaged conf/ and, in a project, its own conf/), and the config is composed once.
`--hydra-help` is still Hydra's own.
"""

from __future__ import annotations

import string

from omegaconf import DictConfig, OmegaConf

from evalrun.cli.install import home_line
from evalrun.config.usage import default_first, group_options, option_folders
from evalrun.errors import MEANING


def help_text(cfg: DictConfig) -> str:
    """The page for a config composed with its hydra node (`return_hydra_config=True`): its
    `hydra.help.template` with the groups and the config filled in, then the exit codes
    (Hydra's own flags help and Hydra's groups are `--hydra-help`'s)."""
    chosen = dict(cfg.hydra.runtime.choices)
    groups = "\n".join(
        f"{g}: {', '.join(default_first(names, chosen.get(g)))}"
        for g, names in group_options(option_folders()).items()
    )
    shown = OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "hydra"])
    page = string.Template(str(cfg.hydra.help.template)).safe_substitute(
        APP_CONFIG_GROUPS=groups + "\n",
        HYDRA_CONFIG_GROUPS="(see evalrun --hydra-help)",
        FLAGS_HELP="(see evalrun --hydra-help)",
        CONFIG=OmegaConf.to_yaml(shown),
    )
    codes = "\n".join(f"{code:>3} {code.name.lower():<16} {said}" for code, said in MEANING.items())
    return f"{page.rstrip()}\n{home_line()}\n\n== Exit codes ==\n{codes}"
