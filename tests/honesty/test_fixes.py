"""Every reward hack `evalrun check` can report has a fix of its own to show."""

from __future__ import annotations

from evalrun.honesty.fixes import (
    FIXES,
    HARNESS,
    OWN_OVERLAY,
    SHADOW_STDLIB_HARDENED,
    SHADOW_STDLIB_UNHARDENED,
    UNKNOWN,
    fix_for,
)
from evalrun.honesty.tamper import ATTACKS


def test_every_verifier_attack_has_its_own_fix():
    for attack in ATTACKS:
        fix = fix_for(attack, hardened=True)
        if attack.defended_by == "harness":
            assert fix == HARNESS
        else:
            assert fix != UNKNOWN, f"{attack.name} has no fix in evalrun.honesty.fixes"
    assert set(FIXES) | {"shadow-stdlib"} >= {
        a.name for a in ATTACKS if a.defended_by == "verifier"
    }


def test_shadow_stdlib_says_whether_hardening_was_on():
    attack = next(a for a in ATTACKS if a.name == "shadow-stdlib")
    assert fix_for(attack, hardened=False) == SHADOW_STDLIB_UNHARDENED
    assert fix_for(attack, hardened=True) == SHADOW_STDLIB_HARDENED
    assert "PYTHONPATH" in SHADOW_STDLIB_HARDENED


def test_a_tasks_own_overlay_and_the_unfixable_say_so():
    assert fix_for(None, hardened=True) == OWN_OVERLAY
    exit_at_import = next(a for a in ATTACKS if a.name == "exit-at-import")
    assert fix_for(exit_at_import, hardened=True).endswith("verifier hardening cannot fix this")
