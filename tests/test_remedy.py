"""remedy.plan on its own: a rule's fixes against the config in force and the attempts already made."""

from __future__ import annotations

from logdoctor.input.read import read_lines
from logdoctor.matching.loader import Fix, Rule
from logdoctor.timeline.build import build
from logdoctor.verdict import remedy

H = "May 22 10:33:{:02d} h200 "


def _sglang(sec: int, args: str) -> list[str]:
    return [
        H.format(sec) + "systemd[1]: Started sglang.service - SGLang.",
        H.format(sec + 1) + f"python3[100]: [2026-05-22 10:33:{sec + 1:02d}] server_args=ServerArgs({args})",
        H.format(sec + 2) + "python3[100]: RuntimeError: Not enough memory. Please try to increase "
        "--mem-fraction-static.",
        H.format(sec + 3) + "systemd[1]: sglang.service: Main process exited, code=exited, status=1/FAILURE",
    ]


def _plan(lines, *fixes):
    tl = build(read_lines(lines).records)
    rule = Rule(id="t.rule.x", cause="kv_cache_oom", title="t", engines=("any",), match={}, fixes=list(fixes))
    return remedy.plan(rule, {}, tl.attempts[-1], tl)


def test_raise_steps_from_the_value_in_force():
    fixes, notes = _plan(_sglang(0, "model_path='m', mem_fraction_static=0.8"), Fix("mem_fraction", "raise"))
    assert [(f.flag, f.from_, f.to) for f in fixes] == [("--mem-fraction-static", 0.8, 0.84)] and not notes


def test_a_switch_already_in_force_is_a_note_not_a_fix():
    fixes, notes = _plan(_sglang(0, "model_path='m', disable_cuda_graph=True"), Fix("graphs_off", "enable"))
    assert fixes == [] and notes == ["--disable-cuda-graph already in force"]


def test_a_value_tried_by_an_earlier_attempt_is_not_proposed_again():
    lines = _sglang(0, "model_path='m', mem_fraction_static=0.88") + _sglang(
        10, "model_path='m', mem_fraction_static=0.84"
    )
    fixes, _ = _plan(lines, Fix("mem_fraction", "raise"))
    assert len(fixes) == 1 and fixes[0].from_ == 0.84 and fixes[0].to not in (0.84, 0.88) and fixes[0].to > 0.84


def test_when_engine_limits_a_fix_to_one_engine():
    fixes, _ = _plan(
        _sglang(0, "model_path='m'"), Fix("attention_backend", "set", value="TRITON_ATTN", when={"engine": "vllm"})
    )
    assert fixes == []


def test_set_without_a_value_says_the_flag_must_change():
    fixes, _ = _plan(_sglang(0, "model_path='m', tp_size=2"), Fix("tp_size", "set"))
    assert [(f.flag, f.from_, f.to) for f in fixes] == [("--tp-size", 2, None)]
    assert remedy.render_fix(fixes[0]) == "change --tp-size"


def test_values_tried_outside_the_window_are_skipped_too():
    """tried_extra (the attempt history's values for this unit) joins the window's own earlier attempts."""
    lines = _sglang(0, "model_path='m', mem_fraction_static=0.84")
    tl = build(read_lines(lines).records)
    rule = Rule(
        id="t.rule.x", cause="kv_cache_oom", title="t", engines=("any",), match={}, fixes=[Fix("mem_fraction", "raise")]
    )
    plain, _ = remedy.plan(rule, {}, tl.attempts[-1], tl)
    skipped, _ = remedy.plan(rule, {}, tl.attempts[-1], tl, tried_extra={"mem_fraction": [plain[0].to]})
    assert plain[0].to != skipped[0].to and skipped[0].to > 0.84
