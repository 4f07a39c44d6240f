"""Precedence by mechanism: a fallback rule yields to any specific rule that fires, and wins when none does."""

from __future__ import annotations

from pathlib import Path

from logdoctor.matching.conditions import Context
from logdoctor.matching.loader import build_rule
from logdoctor.matching.rank import candidates
from logdoctor.read import read_lines
from logdoctor.timeline import build

LOG = [
    "Traceback (most recent call last):",
    '  File "/x/cuda_graph_runner.py", line 3, in capture',
    "    go()",
    "Exception: Capture cuda graph failed: CUDA error: no kernel image is available for execution on the device",
]


def _rule(rid, cause, match, priority, fallback=False):
    return build_rule(
        {"id": rid, "cause": cause, "title": rid, "match": match, "priority": priority, "fallback": fallback},
        Path(f"{rid}.yaml"),
    )


CATCH_ALL = _rule("t.capture.failed", "graph_capture_fault", {"error": "Capture cuda graph failed"}, 150, fallback=True)
SPECIFIC = _rule("t.kernel.no-image", "kernel_arch_mismatch", {"inner": "no kernel image"}, 50)
UNRELATED = _rule("t.port.in-use", "port_in_use", {"error": "Address already in use"}, 90)


def _ranked(rules, lines=LOG):
    tl = build(read_lines(lines).records)
    return [c.rule.id for c in candidates(rules, Context.build(tl, tl.attempts[-1]))]


def test_fallback_yields_to_a_specific_rule_even_with_a_higher_priority():
    assert _ranked([CATCH_ALL, SPECIFIC]) == ["t.kernel.no-image"]


def test_fallback_wins_when_nothing_specific_fires():
    assert _ranked([CATCH_ALL, UNRELATED]) == ["t.capture.failed"]


def test_without_fallback_priority_decides():
    plain = _rule("t.capture.plain", "graph_capture_fault", {"error": "Capture cuda graph failed"}, 150)
    assert _ranked([plain, SPECIFIC]) == ["t.capture.plain", "t.kernel.no-image"]
