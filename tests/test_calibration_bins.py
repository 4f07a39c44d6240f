"""`eval --calibration` bins count what they should (issue 23): only verdicts that name a cause are binned, so a
deliberately miscalibrated toy set reads as miscalibrated — healthy verdicts and abstentions no longer fill the low
bins with "right 1.0"."""

from __future__ import annotations

from logdoctor.classify import calibration as cal
from logdoctor.classify.evaluation import CaseResult


def case(i: int, label: str | None, cause: str | None, conf: float) -> CaseResult:
    ok = label == cause
    return CaseResult(
        id=f"c{i}",
        engine="sglang",
        label_cause=label,
        label_phase="memory_pool",
        cause=cause,
        phase="memory_pool",
        confidence=conf,
        rule=None,
        cause_ok=ok,
        cause_or_secondary_ok=ok,
        phase_ok=True,
        fix_ok=None,
        unknown=cause == "unknown",
    )


def toy() -> list[CaseResult]:
    out = []
    # over-confident: 10 verdicts at 0.95, only 3 right (the rest name the wrong cause or call a healthy case failed)
    out += [case(i, "kv_cache_oom", "kv_cache_oom", 0.95) for i in range(3)]
    out += [case(10 + i, "weights_oom", "kv_cache_oom", 0.95) for i in range(5)]
    out += [case(20 + i, None, "kv_cache_oom", 0.92) for i in range(2)]
    # under-confident: 6 verdicts at 0.3, all right
    out += [case(30 + i, "host_oom", "host_oom", 0.3) for i in range(6)]
    # not claims: healthy called healthy (confidence 0.9), abstentions (confidence 0)
    out += [case(40 + i, None, None, 0.9) for i in range(8)]
    out += [case(50 + i, "unknown", "unknown", 0.0) for i in range(4)]
    out += [case(60, "host_oom", "unknown", 0.0)]
    return out


def test_a_miscalibrated_toy_set_reads_as_miscalibrated():
    rep = cal.reliability(toy())
    bins = rep["bins"]
    assert bins["0.9-1.0"] == {"cases": 10, "right": 3, "share": 0.3, "mean_confidence": 0.944}
    assert bins["0.0-0.5"] == {"cases": 6, "right": 6, "share": 1.0, "mean_confidence": 0.3}
    assert bins["0.5-0.7"]["cases"] == 0 and bins["0.5-0.7"]["share"] is None
    assert rep["named_cause"] == 16 and rep["conf>=0.8"] == 10 and rep["right_at_conf>=0.8"] == 0.3
    assert rep["wrong_at_conf"] == sorted([f"c{10 + i}" for i in range(5)] + ["c20", "c21"])
    assert rep["healthy_verdicts"] == {"cases": 8, "right": 8}
    assert rep["unknown_verdicts"] == {"cases": 5, "label_unknown": 4}
    assert sum(b["cases"] for b in bins.values()) == rep["named_cause"]


def test_a_confidence_of_exactly_one_is_binned_and_unseen_filters():
    rs = [case(1, "kv_cache_oom", "kv_cache_oom", 1.0), case(2, "kv_cache_oom", "host_oom", 0.75)]
    rep = cal.reliability(rs)
    assert rep["bins"]["0.9-1.0"]["cases"] == 1 and rep["bins"]["0.7-0.8"] == {
        "cases": 1,
        "right": 0,
        "share": 0.0,
        "mean_confidence": 0.75,
    }
    assert cal.reliability(rs, unseen_ids={"c2"})["named_cause"] == 1
