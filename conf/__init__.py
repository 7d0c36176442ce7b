"""evalrun's Hydra config tree. This file only makes the folder importable as the package
`evalrun.bundled.conf`, so a project's config can put it on Hydra's search path with
`pkg://evalrun.bundled.conf` (Hydra's package config source requires an `__init__.py`)."""
