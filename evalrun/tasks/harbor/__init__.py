"""The Harbor / Terminal-Bench 2.x task format: task.toml (`toml`, `keys`), the environment
(`env`), the reward (`reward`), multi-step tasks (`steps`) and the `TaskFormat` (`format`)."""
