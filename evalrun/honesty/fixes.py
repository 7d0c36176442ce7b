"""What `evalrun check` tells the author of a gameable verifier: one fix per reward hack that won.

A suite's author reads "gameable by tamper/exit-at-import" and needs the change that closes it:
which verifier kit helper, which flag - and whether anything evalrun does could close it instead.
Verifier hardening (`evalrun.verifier.hardening`) stops standard-library shadowing in a verifier's
deciding python; it cannot stop a verifier that imports the workspace's code into that process,
reads its verdict from a file the workspace can write, or sets PYTHONPATH itself. Each line says
which case it is.
"""

from __future__ import annotations

from evalrun.honesty.tamper import Attack

GUIDE = "`evalrun docs verifiers`, 'Writing a verifier'"
NOT_HARDENING = "verifier hardening cannot fix this"
KIT = "verifykit `Session` / `run`"
IN_A_CHILD = (
    "the workspace's code runs where the verdict is decided, or its exit status is trusted: "
    f"call it only in a child ({KIT}) from a `python3 -I` parent, see {GUIDE}; {NOT_HARDENING}"
)
FIXES = {
    "patch-test-framework": IN_A_CHILD,
    "exit-at-import": IN_A_CHILD,
    "verdict-from-import": (
        "the workspace's code rewrote what the verdict comes from (a verdict file, a script "
        f"bash was still reading): decide on a `python3 -I` parent's own exit status ({KIT}); "
        f"{NOT_HARDENING}"
    ),
    "pass-files": (
        "read the verdict from the verifier's own exit status, not a file the workspace can "
        f"write; {NOT_HARDENING}"
    ),
    "answer-everything": (
        "an answer pasting the whole workspace passes: cap its length and forbid what only a "
        f"paste holds (`max_chars`, `forbidden`, see {GUIDE}); {NOT_HARDENING}"
    ),
    "shadow-verifier-modules": (
        "a module of the verifier's was imported from a planted copy: import it by path "
        "(verifykit `import_hidden`) before the workspace's code runs"
    ),
    "usercustomize": (
        "a start-up file of the workspace's ran in the verifier's python: keep the agent's HOME "
        "and environment away from it, or run `python3 -I`"
    ),
    "sitecustomize": (
        "a start-up file of the workspace's ran: the verifier puts the workspace on PYTHONPATH - "
        'append instead (`PYTHONPATH="$PYTHONPATH:."` keeps evalrun\'s hook first) or run '
        "`python3 -I`"
    ),
}
SHADOW_STDLIB_HARDENED = (
    "a python of this verifier still took the standard library from the workspace: if it sets "
    'PYTHONPATH, append instead (`PYTHONPATH="$PYTHONPATH:."`; setting it drops evalrun\'s hook); '
    "the workspace's own programs are never hardened, so only their output may decide, "
    f"compared in a `python3 -I` parent, see {GUIDE}"
)
SHADOW_STDLIB_UNHARDENED = (
    "verifier hardening was off for this task (`verifier_hardening`); on, it stops this in a "
    "verifier deciding in `python3 -`, `-c`, `-m` or a script of its own"
)
HARNESS = (
    "the sandbox harness, not the verifier, must stop this attack: a bug in evalrun, please "
    "report it with the sandbox backend"
)
OWN_OVERLAY = "the task's own tamper overlay beat the verifier: make the verifier reject it"
UNKNOWN = f"make the verifier reject this attack, see {GUIDE}"


def fix_for(attack: Attack | None, hardened: bool) -> str:
    """The one-line fix for a verifier that `attack` beat (None: the task's own tamper overlay);
    `hardened`: whether verifier hardening was on for the task."""
    if attack is None:
        return OWN_OVERLAY
    if attack.defended_by == "harness":
        return HARNESS
    if attack.name == "shadow-stdlib":
        return SHADOW_STDLIB_HARDENED if hardened else SHADOW_STDLIB_UNHARDENED
    return FIXES.get(attack.name, UNKNOWN)
