"""Hyperscan finds the candidate lines, RE2 decides them: the scan must cut the same segments and keep the same hit
lines as RE2 alone over the whole buffer, on every fixture log and on noise with non-ASCII bytes, invalid UTF-8 and
lines of every length around the buffer's edge.

Why it can differ at all: Hyperscan runs on bytes (prefilter mode, widened patterns) while RE2 reads UTF-8, so a
line with non-ASCII bytes is always handed to RE2 (prefilter.HyperscanLines.NON_ASCII). This test is what says the
two paths agree; without hyperscan installed there is only one path and it skips.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

pytest.importorskip("re2")
pytest.importorskip("hyperscan")

from logdoctor.scan import scan as scanmod  # noqa: E402
from logdoctor.scan.prefilter import Prefilter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted(p for p in (ROOT / "fixtures" / "journals").rglob("*") if p.is_file() and p.suffix in (".log", ".txt"))


@pytest.fixture(scope="module")
def both():
    hs, re2 = Prefilter(scanner="hyperscan"), Prefilter(scanner="re2")
    assert hs.scanner == "hyperscan" and hs.lines is not None
    assert re2.scanner == "re2" and re2.lines is None
    return hs, re2


def _segments(data: bytes, pf: Prefilter) -> list[tuple]:
    stats = scanmod.ScanStats()
    segs = [
        (s.first_line, s.nlines, s.nbytes, s.signal, s.hits + list(s.hits_tail), s.lines(full=s.signal))
        for s in scanmod.scan(io.BytesIO(data), pf, stats=stats)
    ]
    return [segs, stats.lines, stats.hits, stats.long_lines]


def test_fixture_logs_scan_alike(both):
    hs, re2 = both
    assert len(LOGS) > 200
    hits = 0
    for p in LOGS:
        data = p.read_bytes()
        got, want = _segments(data, hs), _segments(data, re2)
        assert got == want, p
        hits += got[2]
    assert hits > 10000  # the fixtures do exercise the prefilter


def _noise(rnd: random.Random, n: int) -> bytes:
    """Serving noise with failure and marker lines sprinkled in, some of them in non-ASCII or broken UTF-8."""
    fixtures = [p.read_bytes().splitlines() for p in LOGS[:: max(1, len(LOGS) // 40)]]
    words = ["héllo wörld", "█▉▊▋▌▍▎▏", "\u2026", "日本語のログ", "\udcff"]
    out = []
    for i in range(n):
        k = rnd.random()
        if k < 0.7:
            out.append(
                f"May 23 10:00:{i % 60:02d} h1 python3[2314]: [2026-05-23 10:00:00 TP0] Decode batch. "
                f"#running-req: {rnd.randrange(64)}, gen throughput (token/s): {rnd.random():.1f}".encode()
            )
        elif k < 0.85:
            src = rnd.choice(fixtures)
            out.append(rnd.choice(src) if src else b"")
        elif k < 0.95:
            w = rnd.choice(words).encode("utf-8", "surrogateescape")
            line = rnd.choice(rnd.choice(fixtures) or [b"x"])
            cut = rnd.randrange(len(line) + 1)
            out.append(line[:cut] + w + line[cut:])  # a non-ASCII byte inside a marker or error line
        else:
            out.append(bytes(rnd.randrange(1, 256) for _ in range(rnd.randrange(1, 300))).replace(b"\n", b" "))
    return b"\n".join(out) + b"\n"


def test_noise_with_non_ascii_scans_alike(both, monkeypatch):
    hs, re2 = both
    monkeypatch.setattr(scanmod, "CHUNK", 1 << 16)  # many buffer edges
    rnd = random.Random(7)
    for _ in range(4):
        data = _noise(rnd, 6000)
        assert _segments(data, hs) == _segments(data, re2)


def test_candidates_cover_every_re2_line(both):
    """The superset property itself, line by line, on one buffer: every line RE2 matches is a candidate."""
    hs, re2 = both
    data = _noise(random.Random(3), 4000)
    want = set()
    pos = 0
    while True:
        m = re2.regex.search(data, pos)
        if m is None:
            break
        want.add(data.rfind(b"\n", 0, m.start()) + 1)
        pos = data.find(b"\n", m.end()) + 1
        if pos == 0:
            break
    got = {data.rfind(b"\n", 0, e - 1) + 1 for e in hs.lines.ends(data)}
    assert want and want <= got


def test_a_multibyte_character_where_a_pattern_counts_one(both):
    """RE2 reads `.` as one UTF-8 character and `.{0,200}` as 200 of them; on bytes they would be one byte and 200
    bytes. Such lines are handed to RE2 whole, so a curly quote or a long CJK message cannot hide a rule's line."""
    hs, re2 = both
    lines = [
        "Quantization method specified in the model config (fp8) does not match the quantization method specified "
        "in the \u2018quantization\u2019 argument (awq).",
        "ValueError: " + "\u65e5\u672c" * 90 + " must be divisible by 8",
    ]
    noise = b'May 23 10:00:00 h1 python3[1]: [2026-05-23 10:00:00] INFO:     10.0.0.1:5 - "POST /generate" 200 OK\n'
    data = noise * 50 + "".join(line + "\n" for line in lines).encode() + noise * 50
    got, want = _segments(data, hs), _segments(data, re2)
    assert [h[1].decode() for h in want[0][0][4]] == lines  # RE2 does select both lines ...
    assert got == want  # ... and so does the Hyperscan path


def _cache_files(d: Path) -> list[Path]:
    return sorted(d.glob("hyperscan-*.db"))


def test_compiled_database_is_cached_and_a_bad_entry_is_rebuilt(tmp_path, monkeypatch):
    """The compiled database (~0.3 s to build) is kept in the cache folder: a second start loads it and scans
    alike; a cut, corrupted or foreign-writable entry is compiled again, never trusted."""
    from logdoctor.scan import prefilter

    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(tmp_path))
    data = _noise(random.Random(11), 3000)
    first = Prefilter(scanner="hyperscan")
    assert first.scanner == "hyperscan"
    (entry,) = _cache_files(tmp_path)
    want = _segments(data, first)

    compiled = []  # one entry per start that found no usable database in the cache
    real = prefilter._cached_database

    def spy(*args):
        db = real(*args)
        if db is None:
            compiled.append(1)
        return db

    monkeypatch.setattr(prefilter, "_cached_database", spy)
    loaded = Prefilter(scanner="hyperscan")
    assert not compiled and loaded.scanner == "hyperscan"  # from the cache
    assert _segments(data, loaded) == want

    good = entry.read_bytes()
    rnd = random.Random(5)
    flipped = bytearray(good)
    for i in rnd.sample(range(len(good)), 64):
        flipped[i] ^= 0xFF
    for bad in (good[: len(good) // 2], b"not a database", bytes(flipped)):
        entry.write_bytes(bad)
        compiled.clear()
        pf = Prefilter(scanner="hyperscan")
        assert compiled and pf.scanner == "hyperscan", bad[:16]  # compiled again ...
        assert entry.read_bytes() == good  # ... and stored again
        assert _segments(data, pf) == want

    entry.chmod(0o666)  # writable by others: not ours to trust
    compiled.clear()
    Prefilter(scanner="hyperscan")
    assert compiled


def test_pattern_groups_are_cached_and_a_bad_entry_is_probed_again(tmp_path, monkeypatch):
    """The probed pattern lists are kept too; an entry that is damaged or names a pattern that is not a candidate
    (a catch-all `.*` slipped in would select every line) is ignored and rebuilt."""
    import json

    from logdoctor.scan import prefilter

    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(tmp_path))
    prefilter.groups.cache_clear()
    try:
        fresh = prefilter.groups()
        (entry,) = tmp_path.glob("prefilter-*.json")
        prefilter.groups.cache_clear()
        assert prefilter.groups() == fresh
        probes = []
        monkeypatch.setattr(prefilter, "_valid", lambda p, real=prefilter._valid: (probes.append(p), real(p))[1])
        prefilter.groups.cache_clear()
        assert prefilter.groups() == fresh and not probes  # from the cache: nothing probed
        lists = json.loads(entry.read_text())
        for bad in ("{not json", json.dumps([lists[0], lists[1] + [".*"], lists[2], lists[3]]), json.dumps([1, 2])):
            entry.write_text(bad)
            prefilter.groups.cache_clear()
            assert prefilter.groups() == fresh and probes, bad[:20]
            probes.clear()
    finally:
        prefilter.groups.cache_clear()
