"""Proving verifiers honest: `evalrun check` (`check`), the reward-hack library (`tamper`), the
fix `check` prints per winning hack (`fixes`), and the behaviour probes' own check (`probes`)."""
