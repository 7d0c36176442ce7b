"""Numbers from runs, compute only: statistics (`stats`), metrics and their one table of names
(`metrics`, `metric_table`), power, the regression gate, diffs of runs and configs, sweeps.
Rendering lives in `evalrun.report`."""
