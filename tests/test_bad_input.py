"""Bad input never gives a traceback: one clear line on stderr and exit code 2 (design.md), through the real CLI.
Damage a log survives (NUL bytes, over-long lines, truncated archives, UTF-16) is in test_reliability.py."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "fixtures" / "journals" / "formats" / "short.log").read_bytes()


def run(args, stdin: bytes = b"", env=None):
    e = dict(os.environ, NO_COLOR="1")
    e.update(env or {})
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", *args], input=stdin, capture_output=True, env=e, cwd=ROOT, timeout=60
    )
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def assert_one_line_error(rc, err, code=2, needle=""):
    assert rc == code, err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert needle.lower() in lines[0].lower(), lines[0]


def test_empty_pipe():
    rc, out, err = run(["explain"], b"")
    assert_one_line_error(rc, err, needle="no log lines on stdin — try: journalctl -u UNIT -n 1000 --no-pager")


def test_whitespace_only():
    rc, out, err = run(["explain"], b"\n\n   \n")
    assert_one_line_error(rc, err, needle="no log lines")


def test_binary_junk():
    rc, out, err = run(["explain"], os.urandom(20000))
    assert_one_line_error(rc, err, needle="binary")


def test_invalid_utf8_is_decoded_with_replacement_and_counted():
    data = GOOD.replace(b"Qwen3-32B", b"Qwen3\xff\xfe-32B", 1)
    rc, out, err = run(["explain", "--stats"], data)
    assert rc in (0, 1, 3)
    assert "2 invalid UTF-8 bytes replaced" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("comp", [gzip.compress, lzma.compress, bz2.compress])
def test_compressed_by_content_not_name(tmp_path, comp):
    f = tmp_path / "journal.txt"  # no .gz suffix on purpose
    f.write_bytes(comp(GOOD))
    rc, out, err = run(["timeline", str(f)])
    assert rc == 0, err
    assert "sglang" in out


def test_missing_file():
    rc, out, err = run(["explain", "/nonexistent/journal.log"])
    assert_one_line_error(rc, err, needle="no such file")


def test_directory_as_source(tmp_path):
    rc, out, err = run(["explain", str(tmp_path)])
    assert_one_line_error(rc, err, needle="is a directory")


def test_malformed_rule_file(tmp_path):
    d = tmp_path / "rules" / "kv_cache_oom"
    d.mkdir(parents=True)
    (d / "bad.yaml").write_text("id: x.y\ncause: kv_cache_oom\ntitle: t\nmatch: {all: [\n")
    rc, out, err = run(["explain", "--rules", str(tmp_path / "rules"), "-"], GOOD)
    assert_one_line_error(rc, err, needle="bad.yaml")
    assert "invalid YAML" in err


def test_rule_with_unknown_condition(tmp_path):
    d = tmp_path / "rules" / "kv_cache_oom"
    d.mkdir(parents=True)
    (d / "bad.yaml").write_text("id: x.y\ncause: kv_cache_oom\ntitle: tt\nmatch:\n  messsage: foo\n")
    rc, out, err = run(["explain", "--rules", str(tmp_path / "rules"), "-"], GOOD)
    assert_one_line_error(rc, err, needle="bad.yaml:5")
    assert "unknown condition 'messsage'" in err


def test_truncated_journal_export_is_counted_not_dropped():
    from logdoctor.input.read import read_bytes

    data = (
        b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\n_BOOT_ID=ab\nMESSAGE=one\n\n__CURSOR=s=2\n"
        b"__REALTIME_TIMESTAMP=2\n_BOOT_ID=ab\nMESSAGE\n\x40\x00\x00\x00\x00\x00\x00\x00trunc"
    )
    res = read_bytes(data)
    assert [r.msg for r in res.records] == ["one"]
    assert res.stats.unparsed == 1 and "truncated" in res.unparsed[0].reason
