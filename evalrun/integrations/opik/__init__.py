"""All of evalrun's Opik code, behind the tracker and judge seams; the core never imports it.

Offline runs (`tracker=opik`, `judge=<option>`):

- `tracker`: `OpikTracker`, the `tracker=opik` sink - an experiment per run, a trace per sample.
- `export` (what is sent and how duplicates are avoided), `traces` (records as the SDK's keyword
  arguments, deterministic ids, experiment scores by the names of `evalrun.analysis.metric_table`),
  `link`
  (`<run-dir>/opik.json`: which experiment a run is), `push` (`evalrun push` / `evalrun sync`).
- `suite`: probe `assertions:` as an Opik test suite; its pass rates go to the probes report.
- `geval`: `GEvalJudge`, the LLM judge of `judge=default` and the named judge options.

Online evaluation of a live Opik project, with the same G-Eval judges:

- `online`: `evalrun online project=<p>` - judge the project's threads (or traces), write the
  scores back to Opik as feedback, and keep a run directory that gates and diffs like any run
  (`rundir`: its plan and online.json; `report`: what it prints).
- `rules`: `evalrun online rule create|list` - Opik's online LLM-as-judge rules, made from the
  same judge texts. `commands`: the subcommand's arguments.
- `criteria` (judge texts and their config hash), `conversation` (conversations as G-Eval input,
  the metered judge model), `source` (reading and scoring threads and traces through the SDK),
  `judging` (the judging loop), `settings` (the online config).

The opik SDK and litellm are imported inside functions only. Modules here import the SDK as
`import opik` (absolute), which finds the installed SDK, never this package, as long as evalrun is
imported as a package. No Opik server is reachable where evalrun is developed: every request
path here was exercised against `tests/opik_standin.py`, a local stand-in for Opik's REST API,
and the judge against `tests/openai_standin.py`.
"""

if __name__ != "evalrun.integrations.opik":  # pragma: no cover - a mis-set sys.path
    raise ImportError(
        f"evalrun/opik was imported as {__name__!r}: a folder inside the evalrun package is on "
        "sys.path, so it shadows the opik SDK. Run evalrun as a package (`evalrun` or "
        "`python -m evalrun.cli.main`), not a file inside it."
    )
