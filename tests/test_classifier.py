"""The cause classifier: reproducible training, exported model == scikit-learn, no heavy imports at explain time,
abstention, and the rule/classifier combination."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.classify import model as cm
from logdoctor.classify import runtime
from logdoctor.classify.features import features, mask

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "journals"
SHIPPED = ROOT / "logdoctor" / "data" / "classifier.json"


def _case_dirs():
    return sorted(p.parent for p in FIXTURES.rglob("label.yaml") if (p.parent / "journal.log").exists())


@pytest.fixture(scope="module")
def examples():
    from logdoctor.classify import train as tr

    exs = tr.load_examples([FIXTURES])
    if len({e.cause for e in exs}) < 2:
        pytest.skip("not enough labelled fixtures to train")
    return exs


@pytest.fixture(scope="module")
def fitted(examples):
    from logdoctor.classify import train as tr

    return tr.fit(examples)


# ---- features ------------------------------------------------------------------------------------------------------


def test_mask_hides_variable_parts():
    t = mask("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has 12 MiB free")
    assert t == "torch.outofmemoryerror: cuda out of memory. tried to allocate <size> . gpu <num> has <size> free"
    t = mask("Process 4242 at 0x7f3a2b00 in '/opt/models/llama' /usr/lib/x.so from 10.0.0.5:29500")
    assert t == "process <num> at <hex> in <str> <path> from <ip>"
    assert len(mask("word " * 100).split()) == 24


def test_features_are_sorted_distinct_and_deterministic():
    from logdoctor.timeline.build import build
    from logdoctor.verdict.api import read_any

    dirs = [d for d in _case_dirs()][:5]
    if not dirs:
        pytest.skip("no fixtures")
    for d in dirs:
        res = read_any(d / "journal.log")
        tl = build(res.records)
        f1 = features(tl, tl.attempts[-1])
        f2 = features(build(read_any(d / "journal.log").records), tl.attempts[-1])
        assert f1 == sorted(set(f1)) == f2
        assert any(t.startswith("phase:") for t in f1) and any(t.startswith("engine:") for t in f1)


def test_bucket_hash_is_stable():
    # crc32, not Python's salted hash(): the same bucket in every process
    assert cm.bucket("exc:OutOfMemoryError", 1 << 18) == 37956
    code = "from logdoctor.classify.model import bucket; print(bucket('exc:OutOfMemoryError', 1 << 18))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
        cwd=ROOT,
    ).stdout
    assert int(out) == 37956


# ---- training ------------------------------------------------------------------------------------------------------


def test_training_is_reproducible(examples, fitted, tmp_path):
    from logdoctor.classify import train as tr

    again = tr.fit(list(reversed(examples)))  # input order does not matter either
    a, b = tr.dumps(fitted.data), tr.dumps(again.data)
    assert a == b
    data = json.loads(a)
    assert data["format"] == cm.FORMAT and data["hash"] == "crc32"
    assert len(data["buckets"]) == len(data["coef"]) and all(len(r) == len(data["classes"]) for r in data["coef"])
    assert 0.35 <= data["threshold"] <= 0.95 and data["temperature"] > 0
    assert len(data["training"]["data_sha256"]) == 64


def test_train_command_writes_the_same_bytes_twice(tmp_path):
    from click.testing import CliRunner

    from logdoctor.cli.app import main

    if len(_case_dirs()) < 4:
        pytest.skip("no fixtures")
    # a small, fast subset: a few cases of each of several causes
    import yaml

    by_cause: dict[str, list[Path]] = {}
    for d in _case_dirs():
        lab = yaml.safe_load((d / "label.yaml").read_text()) or {}
        if lab.get("failed", True) and lab.get("cause"):
            by_cause.setdefault(lab["cause"], []).append(d)
    subset = tmp_path / "cases"
    for _cause, ds in sorted(by_cause.items())[:4]:
        for d in ds[:4]:
            dst = subset / d.name
            dst.mkdir(parents=True)
            for f in ("journal.log", "label.yaml"):
                (dst / f).write_bytes((d / f).read_bytes())
    runner = CliRunner()
    outs = []
    for i in range(2):
        out = tmp_path / f"m{i}.json"
        r = runner.invoke(main, ["train", str(subset), "--out", str(out)])
        assert r.exit_code == 0, r.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_exported_model_equals_sklearn(examples, fitted):
    import numpy as np

    from logdoctor.classify import train as tr

    m = cm.Model(json.loads(tr.dumps(fitted.data)))
    t = m.temperature
    ref = tr.softmax_t(fitted.estimator.decision_function(fitted.X), t)
    # and without the temperature, scikit-learn's own predict_proba
    assert np.allclose(
        fitted.estimator.predict_proba(fitted.X),
        tr.softmax_t(fitted.estimator.decision_function(fitted.X), 1.0),
        atol=1e-12,
    )
    worst = 0.0
    for i, ex in enumerate(sorted(examples, key=lambda e: e.id)):
        p = m.predict_proba(ex.tokens)
        for j, c in enumerate(m.classes):
            worst = max(worst, abs(p[c] - ref[i, j]))
    assert worst < 1e-9, worst


# ---- the shipped model -----------------------------------------------------------------------------------------------


def test_shipped_model_is_plain_json():
    if not SHIPPED.exists():
        pytest.skip("no model shipped")
    data = json.loads(SHIPPED.read_text())
    assert data["format"] == cm.FORMAT
    for key in (
        "n_buckets",
        "classes",
        "intercepts",
        "buckets",
        "coef",
        "temperature",
        "threshold",
        "feature_version",
        "training",
    ):
        assert key in data
    assert runtime.load_default() is not None


def test_nonsense_with_the_word_error_is_never_a_confident_cause():
    import logdoctor
    from logdoctor.verdict.api import diagnose

    clf = runtime.load_default()
    for text in (
        "error: everything is fine\nno error here\n",
        "error: everything is fine\nno error here\nERROR: nothing happened\n",
        'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        "RuntimeError: error: everything is fine, no error here\n",
    ):
        for d in (logdoctor.diagnose(text), diagnose(text, classifier=clf)):
            assert (not d.failed) or d.cause == "unknown" or d.confidence < 0.5, (d.cause, d.confidence)
    if clf is not None:
        # with nothing the model knows, it answers its priors: below the threshold
        p = clf.model.predict_proba(["w:everything", "w:fine", "t:err:error: everything is fine"])
        assert max(p.values()) < clf.threshold


def test_classifier_alone_gets_most_fixtures_right():
    if not SHIPPED.exists():
        pytest.skip("no model shipped")
    from logdoctor.classify import evaluation as ev

    res = ev.run([FIXTURES], mode="classifier")
    failed = [r for r in res if r.label_cause is not None]
    if len(failed) < 10:
        pytest.skip("too few fixtures")
    acc = sum(r.cause_ok for r in failed) / len(failed)
    assert acc >= 0.75, acc
    assert not any(r.healthy_flagged for r in res)


# ---- combination ---------------------------------------------------------------------------------------------------


def _attempt_of(cause: str):
    import yaml

    from logdoctor.timeline.build import build
    from logdoctor.verdict.api import read_any

    for d in _case_dirs():
        lab = yaml.safe_load((d / "label.yaml").read_text()) or {}
        if lab.get("cause") == cause and lab.get("failed", True):
            tl = build(read_any(d / "journal.log").records)
            if tl.attempts[-1].failed:
                return tl, tl.attempts[-1]
    pytest.skip(f"no failing {cause} fixture")


def _rule(rid, cause, tier="specific", confidence=0.9):
    from logdoctor.matching.loader import Rule

    return Rule(id=rid, cause=cause, title=rid, engines=("any",), match={}, tier=tier, confidence=confidence)


def _cand(rule, score):
    from logdoctor.matching.conditions import Hit
    from logdoctor.matching.rank import Candidate

    return Candidate(rule, Hit(), score)


def _clf():
    clf = runtime.load_default()
    if clf is None:
        pytest.skip("no model shipped")
    return clf


def test_decisive_rule_wins_and_no_rule_lets_the_classifier_fill_in():
    from logdoctor.matching.rank import confidence

    clf = _clf()
    tl, a = _attempt_of("kv_cache_oom")
    probs = {c: 0.0 for c in clf.model.classes}
    probs["weights_oom"] = 0.9
    probs["kv_cache_oom"] = 0.1
    top = _cand(_rule("r.kv", "kv_cache_oom"), 120)
    other = _cand(_rule("r.cap", "graph_capture_fault"), 90)
    out = clf.rerank(tl, a, [top, other], probs=probs)
    assert out[0].rule.id == "r.kv" and confidence(out) == confidence([top, other])
    # no rule: a confident classifier names the cause, with the fixes of a bundled rule of that cause
    out = clf.rerank(tl, a, [], probs=probs)
    assert out and out[0].rule.id == "classifier" and out[0].cause == "weights_oom"
    assert confidence(out) == 0.9
    # below the threshold: nothing, the verdict stays unknown
    flat = {c: 1.0 / len(probs) for c in probs}
    assert clf.rerank(tl, a, [], probs=flat) == []


def test_close_call_is_reranked_by_the_classifier():
    clf = _clf()
    tl, a = _attempt_of("graph_capture_fault")
    probs = {c: 0.01 for c in clf.model.classes}
    probs["graph_capture_fault"] = 0.8
    probs["kv_cache_oom"] = 0.05
    kv = _cand(_rule("r.kv", "kv_cache_oom", confidence=0.85), 100)
    cap = _cand(_rule("r.cap", "graph_capture_fault", confidence=0.9), 98)
    out = clf.rerank(tl, a, [kv, cap], probs=probs)
    assert out[0].rule.id == "r.cap"
    assert 0.7 <= out[0].confidence <= 0.9
    # the classifier unsure: the rules' order stands
    probs2 = {c: 1.0 / len(probs) for c in probs}
    assert clf.rerank(tl, a, [kv, cap], probs=probs2)[0].rule.id == "r.kv"


def test_classifier_diagnosis_end_to_end():
    """Rules switched off: the classifier alone names the cause of a fixture it was trained on."""
    from logdoctor.timeline.build import build
    from logdoctor.verdict.api import diagnose_timeline, read_any

    clf = _clf()
    import yaml

    for d in _case_dirs():
        lab = yaml.safe_load((d / "label.yaml").read_text()) or {}
        if lab.get("cause") == "kv_cache_oom":
            res = read_any(d / "journal.log")
            dg = diagnose_timeline(build(res.records), res, [], classifier=clf)
            if dg.rule == "classifier":
                assert dg.cause == "kv_cache_oom" and dg.confidence >= clf.threshold - 0.005
                assert dg.evidence and dg.explanation.startswith("No rule matches")
                assert dg.to_dict()["rule"] == "classifier"
                assert any(c["rule"] == "classifier" for c in dg.candidates)
                return
    pytest.skip("no kv_cache_oom fixture the classifier answers")


def test_probabilities_sum_to_one():
    clf = _clf()
    for toks in ([], ["exc:OutOfMemoryError", "phase:memory_pool"], ["w:nccl", "phase:dist_init"]):
        p = clf.model.predict_proba(toks)
        assert math.isclose(sum(p.values()), 1.0, abs_tol=1e-12)


def test_mechanism_tokens_name_the_mechanism_not_the_story():
    from logdoctor.classify.features import mechanisms

    m = mechanisms(
        "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n"
        "Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com for more information."
    )
    assert "capture" in m and "name=cudaerrorstreamcaptureunsupported" in m
    assert "cuda=operation_not_permitted" in m and "permission" not in m  # the message up to " when"
    m = mechanisms("OSError: [Errno 98] Address already in use")
    assert "addr_in_use" in m and "errno=98" in m
    assert "nccl_system" in mechanisms("ncclSystemError: System call (e.g. socket, malloc) failed")
