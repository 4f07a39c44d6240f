"""The classifier's packed weight table (classify/packed.py) answers exactly like the plain one: every row, every
bucket membership, and the probabilities on real fixture tokens, through the marshal copy `explain` loads."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from logdoctor.classify.model import Model
from logdoctor.classify.packed import PackedRows, pack
from logdoctor.classify.runtime import DEFAULT_PATH
from logdoctor.matching.cache import cached_json

ROOT = Path(__file__).resolve().parents[1]


def test_rows_and_probabilities_equal(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(tmp_path))
    data = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    plain = Model(data)
    cold = Model(cached_json(DEFAULT_PATH, pack=pack, tag="model"))  # parsed, packed, copy written
    warm = Model(cached_json(DEFAULT_PATH, pack=pack, tag="model"))  # from the marshal copy
    assert isinstance(warm.weights, PackedRows) and list(tmp_path.glob("model-*.marshal"))
    for m in (cold, warm):
        assert list(m.weights) == list(plain.weights) and len(m.weights) == len(plain.weights)
        assert all(m.weights[b] == plain.weights[b] for b in data["buckets"])
        assert m.weights.get(-1) is None and -1 not in m.weights
    logs = sorted((ROOT / "fixtures" / "journals").glob("*/journal.log"))[:12]
    assert logs
    for log in logs:
        tokens = log.read_text(encoding="utf-8", errors="replace").split()
        assert warm.predict_proba(tokens) == plain.predict_proba(tokens)
        assert warm.top_tokens(tokens, plain.classes[0]) == plain.top_tokens(tokens, plain.classes[0])


def test_unpackable_shapes_left_alone():
    ragged = {"classes": ["a", "b"], "buckets": [1, 2], "coef": [[0.5, 1.0], [2.0]]}
    assert pack(ragged) is ragged
    with pytest.raises(ValueError):
        PackedRows([1, 2], b"\x00" * 8, 2)
