"""The chunked reader and its bounded record store (stream.py, issue 11): same records, same line accounting and the
same verdict as reading the input whole, with routine serving lines bounded by the ring."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.classify.runtime import load_default
from logdoctor.input import read, stream
from logdoctor.matching.loader import load_rules
from logdoctor.timeline.build import build
from logdoctor.verdict.api import diagnose_timeline

ROOT = Path(__file__).resolve().parent.parent
JOURNALS = sorted((ROOT / "fixtures" / "journals").glob("*/journal.log"))
sys.path.insert(0, str(ROOT / "bench"))
import make_inputs  # noqa: E402  (the benchmark's generator: a journal of days of serving, then a failure)


def _whole(path: Path):
    return read.read_bytes(path.read_bytes(), str(path))


def _fields(r):
    return (
        r.line,
        r.end_line,
        r.msg,
        r.text,
        r.fmt,
        r.ts,
        r.host,
        r.pid,
        r.transport,
        r.level,
        r.rank,
        r.proc,
        r.continuation,
        r.prefix_engine,
        r.extra,
    )


@pytest.mark.parametrize("path", JOURNALS[::7], ids=lambda p: p.parent.name)
def test_small_chunks_give_the_same_records_and_stats(path):
    # 4 kB chunks cut every fixture in many places; nothing is dropped below the ring size
    whole = _whole(path)
    got = stream.read_file(str(path), chunk=4096)
    assert [_fields(r) for r in got.records] == [_fields(r) for r in whole.records]
    assert got.stats == whole.stats
    assert got.warnings == whole.warnings


def test_invalid_utf8_across_chunks(tmp_path):
    p = tmp_path / "bad.log"
    p.write_bytes(
        b"".join(b"May 10 00:00:%02d h python3[1]: caf\xe9 \xff line %d\n" % (i % 60, i) for i in range(3000))
    )
    whole, got = _whole(p), stream.read_file(str(p), chunk=1000)
    assert got.stats.bad_bytes == whole.stats.bad_bytes == 6000
    assert [r.msg for r in got.records] == [r.msg for r in whole.records]
    assert got.warnings == whole.warnings


def _diagnosis(res):
    return diagnose_timeline(build(res.records), res, load_rules(()), classifier=load_default())


def _verdict(res):
    return _diagnosis(res).to_dict()


def test_long_serving_stretch_is_bounded_and_verdict_unchanged(tmp_path):
    p = tmp_path / "serving.log"
    make_inputs.serving_then_kv(
        p, 1_500_000, tb_every=900
    )  # ~8 000 serving lines, handled tracebacks, then the failure
    whole = _whole(p)
    got = stream.read_file(str(p), ring=500)
    assert got.stats == whole.stats  # every line still read and counted
    assert len(got.records) < len(whole.records) / 2  # the oldest routine lines are gone
    kept = {r.line for r in got.records}
    # every line that can be evidence stays: tracebacks, errors, systemd, the launch and the failure
    for r in whole.records:
        if (
            r.transport != "service"
            or r.level not in (None, "INFO")
            or "Traceback" in r.msg
            or "Error" in r.msg
            or r.msg[:1].isspace()
        ):
            assert r.line in kept, (r.line, r.msg)
    assert [r.line for r in got.records] == sorted(r.line for r in got.records)
    assert _verdict(got) == _verdict(whole)


def test_damage_is_repaired_and_counted_across_chunks(tmp_path):
    """The input policy of docs/reliability.md on the chunked path: a NUL byte is replaced and an over-long line cut
    to its head, each counted with the line number of the whole input, the other lines read as usual."""
    p = tmp_path / "nul.log"
    p.write_bytes(b"May 10 00:00:00 h python3[1]: ok\n" * 5000 + b"bad \x00 here\n")
    res = stream.read_file(str(p), chunk=4096)
    assert res.stats.nul_bytes == 1 and res.stats.read == 5001 and "first at line 5001" in res.warnings[0]
    p.write_bytes(b"May 10 00:00:00 h python3[1]: ok\n" * 50 + b"x" * 3000 + b"\nok\n")
    res = stream.read_file(str(p), chunk=1024, max_line=2048)
    assert (res.stats.cut_lines, res.stats.cut_bytes, res.stats.read) == (1, 952, 52), res.stats
    assert "first at line 51" in res.warnings[0]
    p.write_bytes(b"ok\n" * 50 + b"x" * 3_000_000 + b"\nok\n")
    res = stream.read_file(str(p), chunk=1024, max_line=2048)
    assert (res.stats.cut_lines, res.stats.cut_bytes, res.stats.read) == (1, 3_000_000 - 2048, 52), res.stats
    assert "longest 3.0 MB" in res.warnings[0]
    p.write_bytes(b" \n" * 10000)
    with pytest.raises(Exception, match="empty input"):
        stream.read_file(str(p), chunk=4096)


def _accounted(stderr: str, origin: str, n: int) -> None:
    """--stats accounts for every one of the n input lines: read n == parsed + unparsed (0) + the routine lines the
    scan passed over without a line parse (a large input goes through the scan: scan/reader.py)."""
    m = re.search(
        rf"{re.escape(origin)}: lines: read (\d+), parsed (\d+), unparsed 0, skipped \d+; (\d+) routine lines "
        "passed by the scan",
        stderr,
    )
    assert m, stderr[-500:]
    read_, parsed, scanned = map(int, m.groups())
    assert read_ == n == parsed + scanned and 0 < parsed < n


def test_cli_streams_a_big_file(tmp_path):
    """The real CLI on a file above STREAM_MIN: exact line accounting, and the verdict of the whole-input path."""
    p = tmp_path / "big.log"
    make_inputs.serving_then_kv(p, stream.STREAM_MIN + 200_000)
    assert stream.wants_stream(str(p))
    env = dict(os.environ, NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--no-history", "--stats", "--format", "json", str(p)],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    n = p.read_bytes().count(b"\n")
    _accounted(proc.stderr.decode(), str(p), n)
    got = json.loads(proc.stdout)
    d = _diagnosis(_whole(p))
    assert proc.returncode == d.exit_code == 1
    want = json.loads(json.dumps(d.to_dict(), default=str))
    assert want["cause"] and want["evidence"]
    for k in ("cause", "phase", "failed", "rule", "confidence", "evidence", "attempts", "fixes"):
        assert got[k] == want[k], k


def test_cli_streams_a_big_pipe(tmp_path):
    """`journalctl … | logdoctor explain` with more than STREAM_MIN bytes: stdin goes through the chunked reader
    (its head decides, as a file's size does) and gives the file's verdict and line accounting."""
    p = tmp_path / "big.log"
    make_inputs.serving_then_kv(p, stream.STREAM_MIN + 200_000)
    env = dict(os.environ, NO_COLOR="1")
    cmd = [sys.executable, "-m", "logdoctor", "explain", "--no-history", "--stats", "--format", "json"]
    with open(p, "rb") as fh:
        piped = subprocess.run(cmd, stdin=fh, capture_output=True, cwd=ROOT, env=env, timeout=300)
    byname = subprocess.run([*cmd, str(p)], capture_output=True, cwd=ROOT, env=env, timeout=300)
    n = p.read_bytes().count(b"\n")
    _accounted(piped.stderr.decode(), "<stdin>", n)
    got, want = json.loads(piped.stdout), json.loads(byname.stdout)
    assert piped.returncode == byname.returncode == 1
    for k in ("cause", "phase", "failed", "rule", "confidence", "evidence", "attempts", "fixes", "window"):
        assert got[k] == want[k], k


def test_routine_lines_of_no_engine_are_bounded():
    """Outside a serving stretch (no engine, or before "ready") the store keeps the first QUIET_HEAD routine lines
    and a ring of the latest QUIET_RING: a log of millions of plain lines holds a bounded number of records, in
    input order, with its head and its tail."""
    keep = stream.Keep(ring=10)
    total = stream.QUIET_HEAD + stream.QUIET_RING + 5000
    res = read.read_lines((f"ok {i}" for i in range(total)), "<t>", sink=keep)
    recs = res.records
    assert res.stats.read == total
    assert len(recs) == stream.QUIET_HEAD + stream.QUIET_RING
    assert [r.line for r in recs] == sorted(r.line for r in recs)
    assert recs[0].msg == "ok 0" and recs[-1].msg == f"ok {total - 1}"
    assert recs[stream.QUIET_HEAD].msg == f"ok {total - stream.QUIET_RING}"
