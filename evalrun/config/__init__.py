"""Configuration: the typed schema of every config group (`schema`, registered with Hydra's
ConfigStore), YAML reading (`yamlio`), model providers and their prices (`providers`, `pricing`),
and the user's project (`project`: their conf/ and tasks/ beside the packaged ones)."""
