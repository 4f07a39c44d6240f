"""The compiled-regex cache (logdoctor/core/rxcache.py) gives the very pattern `re.compile` gives, cold and warm, for every
regex the package compiles, and falls back to `re.compile` on a damaged, foreign or other-interpreter file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.core import rxcache

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LOGDOCTOR_NO_RXCACHE", raising=False)
    monkeypatch.setattr(rxcache, "_table", None)
    monkeypatch.setattr(rxcache, "_added", False)
    return tmp_path


def _package_patterns() -> list[tuple[str, int]]:
    from test_regex_linear import _code_patterns

    return [(p.pattern, p.flags) for p, _ in _code_patterns().values() if isinstance(p.pattern, str)]


def test_cold_and_warm_equal_re_compile(fresh, monkeypatch):
    pats = _package_patterns() + [(r"(?i)(?P<a>x)(?P=a)|y", 0), (r"^a.b$", re.M | re.S), (r"[\u00e9-\u00ff]+", 0)]
    assert len(pats) > 50
    cold = [rxcache.compile(p, f) for p, f in pats]
    rxcache._save()
    assert (fresh / "regex.bin").exists() and (fresh / "regex.bin").stat().st_mode & 0o777 == 0o600
    monkeypatch.setattr(rxcache, "_table", None)
    monkeypatch.setattr(rxcache, "_added", False)
    warm = [rxcache.compile(p, f) for p, f in pats]
    assert rxcache._table  # the second pass was served from the file
    for (p, f), c, w in zip(pats, cold, warm):
        want = re.compile(p, f)
        assert c == want and w == want, p  # Pattern equality: pattern, flags and the compiled program
        assert w.groupindex == want.groupindex and w.groups == want.groups


def test_bad_pattern_raises_like_re(fresh):
    with pytest.raises(re.error):
        rxcache.compile("(unclosed")


def test_damaged_or_foreign_file_falls_back(fresh, monkeypatch):
    f = fresh / "regex.bin"
    f.write_bytes(b"\x00garbage")
    f.chmod(0o600)
    assert rxcache.compile(r"\d+x") == re.compile(r"\d+x")
    # a good file from another interpreter (other key) is ignored, not trusted
    monkeypatch.setattr(rxcache, "_table", {(r"\d+x", 0): rxcache._program(r"\d+x", 0)})
    good = rxcache._encode(rxcache._table)
    monkeypatch.setattr(rxcache, "_KEY", "another interpreter")
    monkeypatch.setattr(rxcache, "_table", None)
    f.write_bytes(good)
    assert rxcache._load() == {}
    monkeypatch.undo()
    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(fresh))
    # the same file, ours: read; made writable by others: ignored
    monkeypatch.setattr(rxcache, "_table", None)
    assert (r"\d+x", 0) in rxcache._load()
    f.chmod(0o622)
    monkeypatch.setattr(rxcache, "_table", None)
    assert rxcache._load() == {}
    # cut: refused whole
    f.chmod(0o600)
    f.write_bytes(good[:-3])
    monkeypatch.setattr(rxcache, "_table", None)
    assert rxcache._load() == {}
    # a damaged program under the right key is dropped and the pattern compiled as usual
    monkeypatch.setattr(rxcache, "_table", {(r"\d+y", 0): (0, b"\x3f\x42\x0f\x00", 0, {}, ())})
    assert rxcache.compile(r"\d+y") == re.compile(r"\d+y")
    assert (r"\d+y", 0) not in rxcache._table or rxcache._build(r"\d+y", rxcache._table[(r"\d+y", 0)]) == re.compile(
        r"\d+y"
    )


def test_explain_writes_then_uses_the_cache(tmp_path):
    fixture = ROOT / "fixtures" / "journals" / "lmdeploy-activation_oom-runtime-mem" / "journal.log"
    env = {"LOGDOCTOR_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "logdoctor", "explain", "--no-history", "--format", "json", str(fixture)]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    assert (tmp_path / "regex.bin").stat().st_size > 0
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    off = subprocess.run(cmd, capture_output=True, text=True, env={**env, "LOGDOCTOR_NO_RXCACHE": "1"}, cwd=ROOT)
    assert first.returncode == second.returncode == off.returncode
    assert first.stdout == second.stdout == off.stdout and first.stdout
