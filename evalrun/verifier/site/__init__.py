"""The start-up hook of a verifier's python: files `evalrun.verifier.hardening` writes into the
sandbox.

Why: verifiers evalrun did not write often decide in a python that has the workspace on its
import path - `python3 - <<'PY'` or `python3 check.py` from the workspace root, `python3 -m
unittest` - so a `json.py` or `unittest.py` the agent left there is imported instead of the
standard library's, and the agent's code decides the verdict. Editing every such verifier is not
an option for a published suite; changing how its python starts is.

```
<private dir>/verifier-site/      first on every verifier command's PYTHONPATH (sandbox_env);
                                  read-only to the agent and the verifier on bwrap, docker, modal
  sitecustomize.py                this package's sitecustomize.py, with the task's settings and
                                  deciding.py's source filled in: every verifier python imports
                                  it at start-up, and a deciding one runs deciding.py
```

Python imports sitecustomize before the main script's folder joins sys.path; a python started
with `-I` or `-E` (the verifier kit's) never reads it: it is hardened already. Both files are
stdlib only and written for any python 3 an image may have; imported as part of evalrun they do
nothing.
"""
