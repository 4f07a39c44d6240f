"""explain reads a large input through the scan triage uses (issue 20: one pipeline): on a multi-attempt log of a few
MB built here (not committed), with a large healthy attempt, a large failing one (tracebacks in hours of serving)
and a small failing one after it, explain through the scan says what the full line-by-line parse says, and what
triage says, on cause, phase and every attempt; its line numbers and line count are the input's."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

import logdoctor
from logdoctor.input import read
from logdoctor.scan.scan import SMALL_SEGMENT

ROOT = Path(__file__).resolve().parent.parent
HEALTHY = ROOT / "fixtures" / "journals" / "sglang-healthy-llama8b-classic" / "journal.log"
sys.path.insert(0, str(ROOT / "bench"))
import make_inputs  # noqa: E402  (the benchmark's generator: journal lines of serving, tracebacks, the seed story)


def _serving(fh, rng: random.Random, sec: int, nbytes: int, tb_every: int = 0) -> int:
    size = n = 0
    while size < nbytes:
        line = make_inputs._serving_line(rng, sec)
        fh.write(line + "\n")
        size += len(line) + 1
        sec += rng.randint(0, 2)
        n += 1
        if tb_every and n % tb_every == 0:
            for t in make_inputs._traceback(rng, sec, 3):
                fh.write(t + "\n")
    return sec


def _build(path: Path) -> None:
    """Attempt 1 starts (a healthy fixture's start) and serves for > SMALL_SEGMENT bytes; the seed story's restarts
    follow, the first after another long stretch of serving with a traceback now and then; the log ends in the
    seed's failures."""
    rng = random.Random(20)
    seed = make_inputs.SEED.read_text().splitlines()
    with path.open("w") as fh:
        fh.write(HEALTHY.read_text())
        sec = _serving(fh, rng, 3600, SMALL_SEGMENT + (600 << 10))
        fh.write("\n".join(seed[:60]) + "\n")
        _serving(fh, rng, sec, SMALL_SEGMENT + (300 << 10), tb_every=4000)
        fh.write("\n".join(seed) + "\n")


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("scan") / "big.log"
    _build(p)
    assert p.stat().st_size > 2 * SMALL_SEGMENT
    return p


def _summary(d) -> tuple:
    return (d.failed, d.cause, d.phase, d.rule, d.attempt_index, d.attempts)


def test_the_scan_reads_it(big):
    from logdoctor.scan.sources import read_any

    res = read_any(big)
    st = res.stats
    assert st.read == big.read_bytes().count(b"\n")
    assert st.scanned > st.read // 2 and st.read == st.parsed + st.unparsed + st.scanned
    lines = big.read_text().split("\n")
    for r in res.records[::50]:  # records carry the input's own line numbers
        assert r.text in lines[r.line - 1], r.line


def test_explain_through_the_scan_equals_the_full_parse(big):
    """The verdict and the attempts list (start lines, phases, causes, outcomes) are those of reading every line."""
    scanned = logdoctor.diagnose(big)
    full = logdoctor.diagnose(read.read_bytes(big.read_bytes(), str(big)))
    assert len(scanned.attempts) >= 4
    assert _summary(scanned) == _summary(full)
    assert [(e.line, e.text) for e in scanned.evidence] == [(e.line, e.text) for e in full.evidence]


def test_explain_through_the_scan_equals_triage(big):
    pytest.importorskip("pandas")
    from logdoctor.triage import run

    d = logdoctor.diagnose(big)
    rows = run([str(big)], jobs=1).frame.sort_values("attempt")
    assert list(rows["outcome"]) == [a["outcome"] for a in d.attempts]
    assert list(rows["phase"]) == [a["phase"] for a in d.attempts]
    v = rows.iloc[d.attempt_index]
    assert (v["outcome"] == "failed", v["cause"], v["phase"]) == (d.failed, d.cause, d.phase)


def test_the_scan_cuts_where_attempts_cut():
    """The scan's boundary patterns are derived from attempts.STARTS (every engine's config dump) and BOOT."""
    from logdoctor.scan.prefilter import _unanchor, groups
    from logdoctor.timeline.attempts import _CONFIG, BOOT, STARTS

    assert _CONFIG.pattern == "|".join(STARTS)
    assert {_unanchor(p) for p in STARTS} | {BOOT + " "} == set(groups().boundary)


def test_damage_counts_cover_every_line(tmp_path):
    """NUL bytes, invalid UTF-8, over-long lines and lines over MATCH_CAP in the routine middle of a large input
    (lines the scan passes without a parse) are counted as the whole-input path counts them."""
    rng = random.Random(5)
    p = tmp_path / "damaged.log"
    seed = make_inputs.SEED.read_text().splitlines()
    with p.open("w") as fh:
        fh.write(HEALTHY.read_text())
        sec = _serving(fh, rng, 3600, SMALL_SEGMENT)
        _serving(fh, rng, sec, 1 << 20)
        fh.write("\n".join(seed) + "\n")
    data = bytearray(p.read_bytes())
    mid = len(data) // 2
    at = data.index(b"\n", mid) + 1
    bad = b"May 12 10:00:00 h python3[1]: a \x00\x00 NUL run, bad \xff\xfe bytes\n" + b"x" * 100_000 + b"\n"
    bad += b"y" * 9000 + b"\n"
    data[at:at] = bad
    p.write_bytes(bytes(data))
    from logdoctor.scan.sources import read_any

    got = read_any(p).stats
    want = read.read_bytes(bytes(data), str(p)).stats
    assert got.scanned > 0
    for k in ("read", "bad_bytes", "nul_bytes", "cut_lines", "cut_bytes", "long_lines", "encoding"):
        assert getattr(got, k) == getattr(want, k), k
    assert got.nul_bytes == 2 and got.bad_bytes == 2 and got.cut_lines == 1 and got.long_lines == 2


def test_a_leading_nul_run_is_damage_and_only_nuls_are_refused(tmp_path):
    """A large input that starts with a stretch of NULs (preallocated, or zeroed by a crash) is still diagnosed, the
    run counted as a cut line; an input of nothing but NULs is refused in one line, as on the whole-input path."""
    seed = (ROOT / "fixtures" / "journals" / "seed-all-attempts" / "journal.log").read_bytes()
    small = logdoctor.diagnose(Path(ROOT / "fixtures" / "journals" / "seed-all-attempts" / "journal.log"))
    (tmp_path / "zeroed.log").write_bytes(b"\x00" * (SMALL_SEGMENT * 2) + seed)
    d = logdoctor.diagnose(tmp_path / "zeroed.log")
    assert d.failed and (d.cause, d.phase) == (small.cause, small.phase)
    (tmp_path / "nuls.log").write_bytes(b"\x00" * (SMALL_SEGMENT * 2))
    with pytest.raises(logdoctor.InputError, match=r"binary data \(\d+ NUL bytes and nothing else\)"):
        logdoctor.diagnose(tmp_path / "nuls.log")
