"""Sandboxes: one fresh, isolated workspace per sample, behind one small async contract.

Backends live one per module (`local`, `bwrap`, `docker`, `modal`) and are chosen by the `_target_`
of the `sandbox` config group. Everything else - agents, grading, the engine - talks only to the
`Sandbox` protocol in `evalrun.sandbox.base`, so any agent runs on any backend.
"""
