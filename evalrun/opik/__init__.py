"""Online evaluation of a live Opik project, with the same G-Eval judges as offline runs.

- `evalrun.opik.online`: `evalrun online project=<p>` - judge the project's threads (or traces),
  write the scores back to Opik as feedback, and keep a run directory that gates and diffs like
  any run.
- `evalrun.opik.rules`: `evalrun online rule create|list` - Opik's online LLM-as-judge rules,
  made from the same judge texts.
- `evalrun.opik.criteria` (judge texts and their config hash), `evalrun.opik.conversation`
  (conversations as G-Eval input, the metered judge model), `evalrun.opik.source` (reading and
  scoring threads and traces through the opik SDK).

The opik SDK and litellm are imported inside functions only. Modules here import the SDK as
`import opik` (absolute), which finds the installed SDK, never this package, as long as evalrun is
imported as a package. No Opik server is reachable where evalrun is developed: every request
path here was exercised against `tests/opik_standin.py`, a local stand-in for Opik's REST API,
and the judge against `tests/openai_standin.py`.
"""

if __name__ != "evalrun.opik":  # pragma: no cover - a mis-set sys.path, not a code path
    raise ImportError(
        f"evalrun/opik was imported as {__name__!r}: a folder inside the evalrun package is on "
        "sys.path, so it shadows the opik SDK. Run evalrun as a package (`evalrun` or "
        "`python -m evalrun.cli`), not a file inside it."
    )
