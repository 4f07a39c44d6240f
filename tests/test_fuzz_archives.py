"""The archive fuzz targets (fuzz/targets.py: archive, tar_headers, nested) under hypothesis, with bounded examples.

Invariants: only the documented errors; member names, per-input and per-run expansion within their caps; explain's
whole-input reader and triage's streamed reader yield the same bytes for any nesting of damaged compression."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.targets import TARGETS, _tar_seed  # noqa: E402

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_MAGIC = st.sampled_from([b"\x1f\x8b\x08\x00", b"\xfd7zXZ\x00", b"BZh9", b"\x28\xb5\x2f\xfd", b"ustar\x00", b""])


@settings(max_examples=200, **_SETTINGS)
@given(st.builds(lambda m, b: m + b, _MAGIC, st.binary(max_size=2000)))
def test_archive(data):
    TARGETS["archive"](data)


@settings(max_examples=300, **_SETTINGS)
@given(st.integers(0, len(_tar_seed()) - 1), st.binary(min_size=1, max_size=64))
def test_tar_headers(at, patch):
    TARGETS["tar_headers"](at.to_bytes(2, "big") + patch)


@settings(max_examples=150, **_SETTINGS)
@given(st.binary(min_size=3, max_size=600))
def test_nested(data):
    TARGETS["nested"](data)
