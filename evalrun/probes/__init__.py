"""Behaviour probes: small fixtures that check *how* an agent works, not only whether it succeeds.

A task asks "did the agent get it right?"; a probe asks "did it use the right tools, keep the diff
small, follow the project's instructions, leave files alone, stay in its workspace?" - things a
change can break while pass rates hold. `evalrun suite=probes` runs the bundled `probes/` folder;
`evalrun check suite=probes` proves every probe's expectations honest with scripted good and bad
runs.

Modules: `spec` (folder layout, probe.yaml, scripted runs), `expect` (the expectation kinds),
`evidence` (what is recorded and snapshotted), `format` (`ProbeFormat`, the loader), `replay`
(scripted runs through the coder loop), `check` (probe sanity), `report` (per-expectation rates).
"""
