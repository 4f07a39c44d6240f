"""The phase state machine (logdoctor/timeline/phases.py): one table, one driver, read by timeline while reading an attempt
and when replaying it to the fatal line."""

from __future__ import annotations

import ast
from pathlib import Path

from logdoctor.core.vocab import EDGES
from logdoctor.engines import ENGINES
from logdoctor.engines.markers import Marker
from logdoctor.timeline.phases import TRANSITIONS, Tracker

ROOT = Path(__file__).resolve().parent.parent


def _m(name: str, phase: str, edge: str = "point", then: str | None = None) -> Marker:
    return Marker(name, "x", phase, edge, then)  # type: ignore[arg-type]


def test_every_marker_edge_of_every_engine_is_declared_for_both_states():
    edges = {m.edge for e in ENGINES.values() for m in e.markers}
    assert edges <= set(EDGES)
    for state in ("idle", "in_phase"):
        for edge in edges:
            assert (state, edge) in TRANSITIONS, (state, edge)


def test_begin_moves_back_a_point_does_not():
    t = Tracker()
    assert t.feed(_m("w", "weight_load", "begin"))
    assert t.feed(_m("g", "graph_capture", "begin")) and t.phase == "graph_capture"
    assert not t.feed(_m("k", "kernel_init")) and t.phase == "graph_capture"
    assert t.feed(_m("w2", "weight_load", "begin")) and t.phase == "weight_load"


def test_end_enters_its_then_as_implied_and_ready_is_serving():
    t = Tracker()
    t.feed(_m("s", "weight_load", "begin"))
    assert t.feed(_m("e", "weight_load", "end", then="memory_pool"))
    assert (t.phase, t.implied) == ("memory_pool", True)
    t.feed(_m("r", "serving", "ready"))
    assert (t.phase, t.implied) == ("serving", False)


def test_launch_lines_enter_only_from_idle():
    t = Tracker()
    assert t.feed(_m("cfg", "launch", "config")) and t.phase == "launch"
    t.feed(_m("d", "dist_init", "begin"))
    assert not t.feed(_m("cfg", "launch", "config"))
    assert not t.feed(_m("p", "launch", "point"))
    assert t.phase == "dist_init"


def test_timeline_declares_no_second_machine():
    """No code outside phases.py branches on an `end` edge's `then` to pick the next phase."""
    src = (ROOT / "logdoctor" / "timeline" / "build.py").read_text()
    tree = ast.parse(src)
    thens = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "then"]
    assert thens == [], "timeline.py reads Marker.then itself; use phases.Tracker / phases.phase_after"
