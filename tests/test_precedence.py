"""Precedence by mechanism: named tiers (vocab.TIERS) rank the rules that fire; within a tier the more specific match
and then the earlier evidence win; a fallback yields to any other rule. Old-shape rules (`priority: N`,
`fallback: true`) still load, as the tier of their band, and `rules lint` warns about them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.core.vocab import TIER_NAMES, TIERS
from logdoctor.input.read import read_lines
from logdoctor.matching.conditions import Context
from logdoctor.matching.decide import TIER_POINTS, tier_for_priority
from logdoctor.matching.loader import build_rule, load_rules
from logdoctor.matching.rank import candidates
from logdoctor.timeline.build import build

ROOT = Path(__file__).resolve().parent.parent


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


LOG = [
    "Traceback (most recent call last):",
    '  File "/x/cuda_graph_runner.py", line 3, in capture',
    "    go()",
    "Exception: Capture cuda graph failed: CUDA error: no kernel image is available for execution on the device",
]


def _rule(rid, cause, match, tier="specific", **extra):
    return build_rule(
        {"id": rid, "cause": cause, "title": rid, "match": match, "tier": tier, **extra}, Path(f"{rid}.yaml")
    )


CATCH_ALL = _rule("t.capture.failed", "graph_capture_fault", {"error": "Capture cuda graph failed"}, "fallback")
SPECIFIC = _rule("t.kernel.no-image", "kernel_arch_mismatch", {"inner": "no kernel image"}, "generic")
UNRELATED = _rule("t.port.in-use", "port_in_use", {"error": "Address already in use"})


def _ranked(rules, lines=LOG):
    tl = build(read_lines(lines).records)
    return [c.rule.id for c in candidates(rules, Context.build(tl, tl.attempts[-1]))]


def test_tiers_are_defined_once_in_order_with_descending_points():
    assert tuple(TIERS) == TIER_NAMES == ("system", "specific", "inferred", "generic", "fallback")
    points = [TIER_POINTS[t] for t in TIER_NAMES]
    assert points == sorted(points, reverse=True) and len(set(points)) == len(points)


def test_fallback_yields_to_any_other_rule_even_of_the_lowest_other_tier():
    assert _ranked([CATCH_ALL, SPECIFIC]) == ["t.kernel.no-image"]


def test_fallback_wins_when_nothing_else_fires():
    assert _ranked([CATCH_ALL, UNRELATED]) == ["t.capture.failed"]


def test_a_higher_tier_beats_a_more_specific_rule_of_a_lower_tier():
    wide = _rule(
        "t.capture.inferred",
        "graph_capture_fault",
        {"all": [{"error": "Capture cuda graph failed"}, {"frame": "^capture$"}, {"file": "cuda_graph"}]},
        "inferred",
    )
    narrow = _rule("t.kernel.specific", "kernel_arch_mismatch", {"inner": "no kernel image"}, "specific")
    assert _ranked([wide, narrow]) == ["t.kernel.specific", "t.capture.inferred"]


def test_within_a_tier_the_variant_with_one_more_condition_wins():
    general = _rule("a.kernel.general", "kernel_arch_mismatch", {"inner": "no kernel image"})
    variant = _rule(
        "z.kernel.in-capture", "kernel_arch_mismatch", {"all": [{"inner": "no kernel image"}, {"frame": "^capture$"}]}
    )
    assert _ranked([general, variant]) == ["z.kernel.in-capture", "a.kernel.general"]


def test_within_a_tier_equal_scores_go_to_the_earlier_evidence_not_the_id():
    lines = ["UserWarning: CUDA capability sm_120 is not compatible with the current PyTorch installation"] + LOG
    root = _rule(
        "z.arch.torch-build", "kernel_arch_mismatch", {"message": "is not compatible with the current PyTorch"}
    )
    symptom = _rule("a.cuda.no-image", "kernel_arch_mismatch", {"error": "no kernel image is available"})
    assert _ranked([symptom, root], lines)[0] == "z.arch.torch-build"


@pytest.mark.parametrize(
    "priority,tier",
    [
        (134, "system"),
        (115, "system"),
        (114, "specific"),
        (85, "specific"),
        (84, "inferred"),
        (60, "inferred"),
        (59, "generic"),
        (0, "generic"),
    ],
)
def test_an_old_priority_maps_onto_the_tier_of_its_band(priority, tier):
    assert tier_for_priority(priority) == tier
    r = build_rule(
        {"id": "t.old", "cause": "port_in_use", "title": "t t", "match": {"error": "x"}, "priority": priority},
        Path("old.yaml"),
    )
    assert r.tier == tier and "deprecated" in r.warnings[0]


def test_old_fallback_flag_loads_as_the_fallback_tier():
    r = build_rule(
        {
            "id": "t.old",
            "cause": "port_in_use",
            "title": "t t",
            "match": {"error": "x"},
            "priority": 150,
            "fallback": True,
        },
        Path("old.yaml"),
    )
    assert r.tier == "fallback" and r.fallback


def test_lint_warns_about_the_old_shape_but_passes(tmp_path):
    d = tmp_path / "port_in_use"
    d.mkdir()
    (d / "old.yaml").write_text("id: x.old\ncause: port_in_use\ntitle: t t\nmatch: {error: foo}\npriority: 90\n")
    (d / "new.yaml").write_text("id: x.new\ncause: port_in_use\ntitle: t t\nmatch: {error: bar}\ntier: generic\n")
    rc, out, err = cli("rules", "lint", str(tmp_path))
    assert rc == 0, err
    assert "old.yaml: warning: priority: 90 is deprecated: it loads as tier: specific" in err
    assert "new.yaml" not in err
    assert "0 problems, 1 warnings" in out


def test_an_unknown_tier_is_a_one_line_error(tmp_path):
    from logdoctor.core.errors import RuleError
    from logdoctor.matching.loader import load_rule_file

    p = tmp_path / "r.yaml"
    p.write_text("id: x.r\ncause: port_in_use\ntitle: t t\nmatch: {error: foo}\ntier: urgent\n")
    with pytest.raises(RuleError, match=r"r.yaml:5: unknown tier 'urgent'"):
        load_rule_file(p)


def test_every_bundled_rule_states_its_tier_in_the_current_shape():
    rules = load_rules(())
    assert rules and all(not r.warnings for r in rules), [r.id for r in rules if r.warnings]
