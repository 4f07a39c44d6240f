"""The compiled rule cache (matching/cache.py) and the literal prefilter (matching/prefilter.py): same rules and
same verdicts as parsing the YAML, rebuilt when a rule changes or the cache is damaged, and --rules DIR still
overrides; the prefilter never skips a regex that could match."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.matching import cache, prefilter
from logdoctor.matching.loader import bundled_rules_dir, load_rule_file, load_rules

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "fixtures" / "journals" / "sglang-kv_cache_oom-qwen3-32b-l40s-attempts" / "journal.log"


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(d))
    return d


def _key(r):
    return (r.id, r.cause, r.tier, r.confidence, repr(r.match), [f.__dict__ for f in r.fixes], r.explain)


def test_cached_rules_equal_parsed_rules(cache_dir):
    first = load_rules(())  # builds the cache
    assert len(list(cache_dir.glob("rules-*.json"))) == 1
    second = load_rules(())  # reads it
    parsed = [load_rule_file(p) for p in cache.rule_files(bundled_rules_dir())]
    assert [_key(r) for r in second] == [_key(r) for r in first] == [_key(r) for r in parsed]


def test_a_changed_rule_rebuilds_and_a_damaged_cache_is_rebuilt(cache_dir, tmp_path):
    user = tmp_path / "user-rules"
    shutil.copytree(bundled_rules_dir() / "port_in_use", user / "port_in_use")
    path = sorted(user.rglob("*.yaml"))[0]
    rid = load_rule_file(path).id
    before = {r.id: r for r in load_rules((str(user),))}[rid]
    path.write_text(
        path.read_text().replace(f"title: {before.title}", "title: edited title")
        if f"title: {before.title}" in path.read_text()
        else re.sub(r"(?m)^title:.*$", "title: edited title", path.read_text())
    )
    after = {r.id: r for r in load_rules((str(user),))}[rid]
    assert after.title == "edited title"
    for p in cache_dir.glob("rules-*.json"):
        p.write_bytes(b"\x80\x04garbage")
    again = {r.id: r for r in load_rules((str(user),))}[rid]
    assert again.title == "edited title"


def test_stat_note_skips_the_content_hash_until_a_file_changes(cache_dir, tmp_path, monkeypatch):
    """The stat note (path, size, mtime of every rule file → content key) stands in for hashing 112 files; any edit
    changes the note's key, so the content hash runs again and the edited rule is read."""
    user = tmp_path / "user-rules"
    shutil.copytree(bundled_rules_dir() / "port_in_use", user / "port_in_use")
    load_rules((str(user),))
    assert list(cache_dir.glob("stat-*.key"))
    calls = []
    real = cache.content_key
    monkeypatch.setattr(cache, "content_key", lambda d, files: calls.append(d) or real(d, files))
    load_rules((str(user),))
    assert calls == []  # nothing changed: no rule file read to hash it
    path = sorted(user.rglob("*.yaml"))[0]
    rid = load_rule_file(path).id
    text = re.sub(r"(?m)^title:.*$", "title: edited again", path.read_text())
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a new mtime even on a coarse clock
    after = {r.id: r for r in load_rules((str(user),))}[rid]
    assert Path(user) in calls and after.title == "edited again"
    for note in cache_dir.glob("stat-*.key"):  # a damaged note is only a miss
        note.write_bytes(b"\xff\xfe")
    assert {r.id: r for r in load_rules((str(user),))}[rid].title == "edited again"


def test_user_rules_override_through_the_cli(cache_dir, tmp_path):
    user = tmp_path / "override"
    src = next((bundled_rules_dir() / "kv_cache_oom").glob("*.yaml"))
    (user / "kv_cache_oom").mkdir(parents=True)
    text = re.sub(r"(?m)^title:.*$", "title: overridden by a user rule", src.read_text())
    (user / "kv_cache_oom" / src.name).write_text(text)
    env = dict(os.environ, LOGDOCTOR_CACHE_DIR=str(cache_dir))
    out = subprocess.run(
        [sys.executable, "-m", "logdoctor", "rules", "list", "--rules", str(user)],
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert "overridden by a user rule" in out


@pytest.mark.parametrize(
    "pattern,text,can",
    [
        (r"CUDA out of memory", "torch.OutOfMemoryError: CUDA out of memory. Tried", True),
        (r"CUDA out of memory", "RuntimeError: CUDA error: an illegal memory access", False),
        (r"(?i)no kernel image", "RuntimeError: CUDA error: NO KERNEL IMAGE is available", True),
        (r"(?:foo|bar)baz", "xbarbazx", True),
        (r"(?:foo|bar)baz", "xquxbaz", False),
        (r"a?bcd(e|)", "zzbcd", True),
        (r"Xid \(PCI:[0-9a-f:.]+\): (\d+)", "NVRM: Xid (PCI:0000:ab:00): 79", True),
    ],
)
def test_prefilter_requirements(pattern, text, can):
    req = prefilter.requirement(pattern)
    assert prefilter.satisfied(req, prefilter.Present(text)) is can
    if re.search(pattern, text):
        assert can  # sound: a pattern that matches is never filtered out


def test_prefilter_is_sound_on_every_rule_regex_and_fixture_line():
    """For every rule regex and every line of a sample of fixtures: a match implies the requirement holds."""
    pats = sorted(prefilter.patterns(load_rules(())))
    lines = []
    for p in sorted((ROOT / "fixtures" / "journals").glob("*/journal.log"))[::6]:
        lines += p.read_text(errors="replace").splitlines()
    text = "\n".join(lines)
    present = prefilter.Present(text)
    compiled = [(p, re.compile(p)) for p in pats]
    for p, rx in compiled:
        if rx.search(text):
            assert prefilter.satisfied(prefilter.requirement(p), present), p


def test_aho_corasick_and_plain_lookups_agree():
    pytest.importorskip("ahocorasick")
    vocab = prefilter.vocabulary(load_rules(()))
    text = LOG.read_text()
    a = prefilter.Present(text)
    a.prime(vocab)
    b = prefilter.Present(text)
    assert {w for w in vocab if w in a} == {w for w in vocab if w in b}


def test_model_copy_equals_the_json_and_survives_damage(cache_dir):
    import json

    from logdoctor.classify.runtime import DEFAULT_PATH

    want = json.loads(DEFAULT_PATH.read_text())
    assert cache.cached_json(DEFAULT_PATH) == want  # first: parsed, copy written
    copies = list(cache_dir.glob("json-*.bin"))
    assert len(copies) == 1
    assert cache.cached_json(DEFAULT_PATH) == want  # then: from the copy
    copies[0].write_bytes(b"\x00broken")
    assert cache.cached_json(DEFAULT_PATH) == want  # a damaged copy is rebuilt


def test_lazy_family_patterns_and_frame_sets_answer_like_the_regexes():
    """Start-up shortcuts that must not change an answer: the classifier's family patterns screened by their literals
    (classify/features.py) and the frame-phase name sets (timeline.py), against the plain regexes on real log text."""
    from logdoctor.classify import features
    from logdoctor.timeline import build as timeline

    lines = []
    for p in sorted((ROOT / "fixtures" / "journals").glob("*/journal.log"))[::5]:
        lines += p.read_text(errors="replace").lower().splitlines()
    assert len(lines) > 1000
    screened = [f for _, f in features._FAMILY_RX if f.lits is not None]
    assert len(screened) > 30
    for _, fam in features._FAMILY_RX:
        rx = re.compile(fam.pattern)
        for ln in lines:
            assert fam.search(ln) == bool(rx.search(ln)), (fam.name, ln)
    funcs = set(re.findall(r"in ([\w<>]+)$", "\n".join(lines), re.M)) | {"forward\n", "capture", "x_capture", ""}
    for (hit, _), (pat, _) in zip(timeline._FRAME_RX, timeline.FRAME_PHASES):
        rx = re.compile(pat)
        for f in funcs:
            assert bool(hit(f)) == bool(rx.match(f)), (pat, f)
