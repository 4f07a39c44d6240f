"""The verdict is built once (issue 20 part 2): the Diagnosis is frozen, the history's findings are Amendments
that build a new verdict, and confidence adjustments are named in logdoctor/verdict/confidence.py."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from logdoctor import diagnose
from logdoctor.history import AttemptRow
from logdoctor.verdict import confidence as cf
from logdoctor.verdict import crossattempt
from logdoctor.verdict.diagnosis import Amendment

ROOT = Path(__file__).resolve().parent.parent
HW = ROOT / "fixtures" / "journals" / "seed-attempt3-hardware" / "journal.log"


@pytest.fixture(scope="module")
def hw():
    d = diagnose(HW)
    assert d.failed and d.cause == "hardware_fault"
    return d


def test_a_built_diagnosis_cannot_be_edited(hw):
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.cause = "port_in_use"  # type: ignore[misc]


def test_amended_builds_a_new_verdict_and_leaves_the_old_one_whole(hw):
    before = hw.to_dict()
    new = hw.amended(
        Amendment(notes=("n1",), confidence=0.42, actions=("a",), clear_fixes=True, attempt_cause="unknown"),
        Amendment(notes=("n2",)),
        history={"escalation": None},
    )
    assert hw.to_dict() == before
    assert new.notes[-2:] == ["n1", "n2"] and new.confidence == 0.42 and new.actions == ["a"]
    assert new.fixes == [] and new.no_flag_change and new.history == {"escalation": None}
    i = hw.attempt_index if hw.attempt_index is not None else -1
    assert new.attempts[i]["cause"] == "unknown" and hw.attempts[i]["cause"] == "hardware_fault"


def test_the_fleet_breaker_is_an_amendment_not_an_edit(hw):
    before = hw.to_dict()
    cur = AttemptRow(key="k", host="h1", unit="u.service", config={})
    rv = crossattempt.review(hw, cur, [], [], fleet=lambda cause, rule: ["h2", "h3", "h4"])
    assert hw.to_dict() == before, "review changed the verdict it read"
    assert rv.fleet is not None and len(rv.amendments) == 1
    out = hw.amended(*rv.amendments)
    assert out.confidence == min(hw.confidence, cf.BREAKER_CAP)
    assert not any("drain" in a.lower() for a in out.actions[1:])
    assert out.actions[0].startswith("before draining hosts")


def test_below_the_breaker_threshold_nothing_is_amended(hw):
    cur = AttemptRow(key="k", host="h1", unit="u.service", config={})
    rv = crossattempt.review(hw, cur, [], [], fleet=lambda cause, rule: ["h2"])
    assert rv.fleet is None and rv.amendments == []


def test_confidence_numbers_live_in_confidence_py():
    """No float literal strictly between 0 and 1 in the modules that used to adjust confidence by hand."""
    found = []
    for rel in ("logdoctor/verdict/api.py", "logdoctor/verdict/crossattempt.py", "logdoctor/classify/runtime.py"):
        for node in ast.walk(ast.parse((ROOT / rel).read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, float) and 0 < node.value < 1:
                found.append(f"{rel}:{node.lineno} {node.value}")
    assert not found, found


def test_the_adjustments_keep_their_numbers():
    assert cf.cut_window(0.9) == 0.7 and cf.cut_window(0.8) == 0.68
    assert cf.escalation(True, False) == 0.8 and round(cf.escalation(False, True), 2) == 0.83
    assert cf.demoted(0.9) == 0.27 and cf.demoted(1.0) == 0.3 and cf.breaker(0.9) == 0.5
