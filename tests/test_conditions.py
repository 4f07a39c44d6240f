"""The condition tree (matching/conditions.py): a rule's `match:` parsed once into nodes, and everything that reads a
condition reading the nodes. The last tests register a made-up leaf and show that evaluation, the loader's checks,
the prefilters' pattern lists and the classifier's evidence view all see it without being told: one walker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from logdoctor.core.errors import RuleError
from logdoctor.input.read import read_lines
from logdoctor.matching import cache, prefilter
from logdoctor.matching.conditions import (
    LEAVES,
    AllNode,
    AnyNode,
    Context,
    Hit,
    LeafNode,
    NotNode,
    evaluate,
    from_data,
    leaf,
    leaves,
    parse,
)
from logdoctor.matching.loader import _cached_classes, build_rule, lint_rule_file, load_rules, rule_patterns
from logdoctor.timeline.build import build

H = "May 22 10:33:{:02d} h200 python3[100]: [2026-05-22 10:33:{:02d} TP0] "
LOG = [
    H.format(1, 1) + "server_args=ServerArgs(model_path='m', tp_size=1, mem_fraction_static=0.88)",
    H.format(2, 2) + "Load weight begin. avail mem=79.00 GB",
    H.format(3, 3) + "Capture cuda graph begin. This can take up to several minutes.",
    H.format(5, 5) + "ERROR:    widget exploded: code 42",
]


def _ctx(lines=LOG) -> Context:
    tl = build(read_lines(lines).records)
    return Context.build(tl, tl.attempts[-1])


def _leaf(name, value, scope=None):
    return LeafNode(name, value, scope)


# ---- the node model -------------------------------------------------------------------------------------------------


def test_a_mapping_is_the_all_of_its_keys_and_scope_goes_to_its_leaves():
    tree = parse({"message": "a", "phase": "warmup", "scope": "before_fatal"})
    assert tree == AllNode([_leaf("message", "a", "before_fatal"), _leaf("phase", "warmup", "before_fatal")])
    # below the root a one-key mapping of a leaf, all: or any: is that node itself
    tree = parse({"all": [{"message": "a"}, {"any": [{"error": "b"}, {"message": "c", "engine": "vllm"}]}]})
    want = AnyNode([_leaf("error", "b"), AllNode([_leaf("message", "c"), _leaf("engine", "vllm")])])
    assert tree == AllNode([AllNode([_leaf("message", "a"), want])])
    assert "LeafNode('message', 'a', None)" in repr(tree)


def test_a_list_is_all_of_it_and_none_is_one_not_per_item():
    assert parse([{"message": "a"}, {"error": "b"}]) == parse({"all": [{"message": "a"}, {"error": "b"}]})
    tree = parse({"error": "x", "none": [{"message": "a"}, {"frame": "f"}]})
    assert tree == AllNode([_leaf("error", "x"), NotNode(_leaf("message", "a")), NotNode(_leaf("frame", "f"))])
    # an exclusion alone in its mapping stays in a mapping of its own (the evidence view drops it there)
    assert parse({"all": [{"not": {"message": "a"}}]}) == AllNode(
        [AllNode([AllNode([NotNode(_leaf("message", "a"))])])]
    )
    assert parse({}) == AllNode() and parse({"scope": "after_fatal"}) == AllNode()


def test_walk_yields_every_leaf_in_file_order_with_its_polarity():
    tree = parse({"any": [{"message": "a"}, {"none": [{"error": "b"}, {"not": {"frame": "c"}}]}], "phase": "x"})
    assert [(lf.name, neg) for lf, neg in tree.walk()] == [
        ("message", False),
        ("error", True),
        ("frame", False),
        ("phase", False),
    ]
    assert [lf.name for lf in leaves(tree)] == ["message", "error", "frame", "phase"]


def test_leaf_patterns_come_from_the_registry():
    lf = _leaf("message", ["a+", "b"])
    assert lf.patterns == lf.searches == ("a+", "b") and lf.spec is LEAVES["message"]
    env = _leaf("env", {"A": "1.*", "B": True, "C": None})
    assert env.patterns == ("1.*",) and env.searches == ()  # compiled and linted, never prefiltered
    assert _leaf("phase", "warmup").patterns == ()
    tree = parse({"message": ["a+", "b"], "not": {"env": {"A": "x"}}, "frame": "^f$"})
    assert rule_patterns(tree) == [("message", "a+"), ("message", "b"), ("env", "x"), ("frame", "^f$")]


def test_evaluation_merges_all_takes_the_best_any_and_not_negates():
    ctx = _ctx()
    h = evaluate({"error": r"widget (?P<what>\w+)", "message": "Capture cuda graph begin"}, ctx, {})
    assert h is not None and h.leaves == 2 and h.captures == {"what": "exploded"}
    assert [ln for ln, _ in h.evidence] == [4, 3]
    h = evaluate(
        {"any": [{"message": "Load weight"}, {"all": [{"error": "widget"}, {"message": "avail mem"}]}]}, ctx, {}
    )
    assert h.leaves == 2 and [ln for ln, _ in h.evidence] == [4, 2]  # the branch with more leaves
    assert evaluate({"any": []}, ctx, {}) is None and evaluate({"all": []}, ctx, {}) == Hit()
    assert evaluate({"error": "widget", "not": {"message": "no such line"}}, ctx, {}) is not None
    assert evaluate({"error": "widget", "none": [{"message": "nope"}, {"message": "Load"}]}, ctx, {}) is None
    assert evaluate(parse({"message": "Load"}), ctx, {}) == evaluate({"message": "Load"}, ctx, {})


def test_parts_and_the_evidence_only_view():
    tree = parse(
        {
            "all": [{"error": "a"}, {"any": [{"message": "b"}, {"phase": "warmup"}]}],
            "any": [{"frame": "c"}, {"engine": "vllm"}],
            "phase": "warmup",
            "none": [{"message": "d"}],
        }
    )
    # the classifier's parts: each child of a top-level all/any and each top-level leaf; exclusions left out
    assert tree.parts() == [
        _leaf("error", "a"),
        AnyNode([_leaf("message", "b"), _leaf("phase", "warmup")]),
        _leaf("frame", "c"),
        _leaf("engine", "vllm"),
        _leaf("phase", "warmup"),
    ]
    assert [p.has_evidence() for p in tree.parts()] == [True, True, True, False, False]
    # evidence only: scoping leaves dropped, an any's non-evidence branches too, the exclusion kept beside evidence
    assert tree.evidence_only() == AllNode(
        [
            AllNode([_leaf("error", "a"), AnyNode([_leaf("message", "b")])]),
            AnyNode([_leaf("frame", "c")]),
            NotNode(_leaf("message", "d")),
        ]
    )
    assert parse({"phase": "warmup", "none": [{"message": "d"}]}).evidence_only() is None
    assert parse({"all": [{"none": [{"message": "d"}]}, {"error": "e"}]}).evidence_only() == AllNode(
        [AllNode([_leaf("error", "e")])]
    )


def test_parse_reports_the_loaders_problems_in_file_order():
    found: list[tuple[str, str]] = []
    tree = parse(
        {"all": {"message": "a"}, "mesage": "b", "any": [3, {"error": "c"}], "not": {}},
        lambda key, msg, value=None: found.append((key, msg)),
    )
    assert [k for k, _ in found] == ["all", "mesage", "match", "match"]
    assert found[0][1] == "all: expects a list of conditions"
    assert found[1][1].startswith("unknown condition 'mesage' (known: message, error,") and found[1][1].endswith(
        ", all, any, none, not)"
    )
    assert found[2][1] == "a condition must be a mapping, got '3'"
    assert tree == AllNode([AnyNode([_leaf("error", "c")])])  # what could be built, for `rules lint`'s other checks
    with pytest.raises(RuleError, match="unknown condition 'mesage'"):
        parse({"mesage": "b"})


def test_the_rule_cache_keeps_the_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    parsed = load_rules(())
    cached = load_rules(())  # from the JSON entry
    assert [r.cond for r in cached] == [r.cond for r in parsed]
    assert all(type(r.cond) is AllNode for r in cached)
    assert all(from_data(r.cond.cache_data()) == r.cond for r in parsed)
    assert parsed[0].cond.cache_data()[0] == "all" and all(isinstance(r.cond.cache_data(), list) for r in parsed)
    entry = cache._decode(cache.read_entry(next((tmp_path / "cache").glob("rules-*.json"))), _cached_classes())
    assert entry["rules"][0].cond == parsed[0].cond
    # a rule made in code gets its tree from `match`
    from logdoctor.matching.loader import Rule

    r = Rule(id="t", cause="kv_cache_oom", title="t", engines=("any",), match={"message": "x"})
    assert r.cond == AllNode([_leaf("message", "x")])


# ---- one walker: a leaf registered here is seen everywhere without touching anything else ---------------------------


@pytest.fixture()
def widget_leaf():
    calls: list[object] = []

    @leaf(
        "widget",
        regex=True,
        evidence=True,
        line=True,
        syntax="widget: RX",
        schema={"$ref": "#/$defs/regexes"},
    )
    def leaf_widget(val, ctx, compiled, scope):
        """A made-up leaf for this test: an ERROR line matches RX. Example: `widget: exploded`."""
        calls.append(val)
        lines = [(ln, t) for ln, t in ctx.errors if "widget" in t]
        for p in val if isinstance(val, list) else [val]:
            for ln, t in lines:
                if compiled.setdefault(p, re.compile(p)).search(t):
                    return Hit([(ln, t)])
        return None

    try:
        yield calls
    finally:
        del LEAVES["widget"]


RULE = {
    "id": "t.widget",
    "cause": "config_invalid",
    "title": "widget",
    "tier": "specific",
    "match": {
        "any": [{"phase": "never_this"}, {"widget": "widget (ex|im)ploded"}],
        "none": [{"widget": "widget exploded: code 7"}],
    },
}


def test_a_new_leaf_is_checked_evaluated_and_indexed_without_touching_any_walker(widget_leaf, tmp_path, monkeypatch):
    rule = build_rule(RULE, Path("t.yaml"))
    assert "widget (ex|im)ploded" in rule.compiled  # the checker compiled its pattern
    # evaluation: the leaf function ran, the rule holds with the leaf's evidence
    h = evaluate(rule.cond, _ctx(), rule.compiled)
    assert h is not None and h.evidence and "widget exploded" in h.evidence[0][1]
    assert widget_leaf == ["widget (ex|im)ploded", "widget exploded: code 7"]
    # the literal prefilter's patterns and vocabulary, the loader's pattern list
    assert rule.regexes() == {"widget (ex|im)ploded", "widget exploded: code 7"}
    assert prefilter.patterns([rule]) == rule.regexes() and "widget" in prefilter.vocabulary([rule])
    assert rule_patterns(rule.cond) == [("widget", "widget (ex|im)ploded"), ("widget", "widget exploded: code 7")]
    # a word the pattern needs is absent: the prefilter skips the leaf, its function is never called
    widget_leaf.clear()
    assert evaluate({"widget": "unicorn"}, _ctx(), {}) is None and widget_leaf == []
    # the triage scanner's line patterns (Leaf.line)
    import logdoctor.matching.loader as loader
    from logdoctor.scan import prefilter as scan_prefilter

    monkeypatch.setattr(loader, "load_rules", lambda extra=(): [rule])
    assert scan_prefilter._rule_patterns() == ["widget (ex|im)ploded", "widget exploded: code 7"]
    # the classifier's evidence view keeps it (Leaf.evidence) and drops the phase branch
    assert rule.cond.evidence_only() == AllNode(
        [AnyNode([_leaf("widget", "widget (ex|im)ploded")]), NotNode(_leaf("widget", "widget exploded: code 7"))]
    )
    # the checker reports its bad regex with the loader's words
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "id: t.bad\ncause: config_invalid\ntitle: t\ntier: specific\nmatch:\n  widget: '(a+)+$'\nexamples: []\n"
    )
    problems: list[str] = []
    lint_rule_file(bad, problems)
    assert any(p.startswith(f"{bad}:6: bad regex '(a+)+$'") for p in problems), problems


def test_a_cached_tree_naming_a_leaf_no_longer_registered_is_not_decoded(widget_leaf):
    rule = build_rule(RULE, Path("t.yaml"), compile_regexes=False)
    data = cache._encode({"rules": [rule]})
    import json

    raw = json.dumps(data).encode()
    assert cache._decode(raw, _cached_classes())["rules"][0].cond == rule.cond
    del LEAVES["widget"]
    try:
        with pytest.raises(KeyError):  # load_dir treats any decode error as a damaged entry and parses the files
            cache._decode(raw, _cached_classes())
    finally:
        LEAVES["widget"] = rule.cond.children[0].children[1].spec
