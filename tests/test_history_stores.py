"""One history suite, two stores: every test taking `spec` runs on an SQLite file and on a throwaway PostgreSQL
cluster (tests/pgserver.py: initdb in a temp folder, a Unix socket only, stopped at the end). Through the CLI as a
subprocess wherever a user would run it. PostgreSQL-only: the spool when the server is away or killed mid-run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pgserver import PgCluster, why_no_server

from logdoctor.history import AttemptRow, History

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals"
CLI = [sys.executable, "-m", "logdoctor"]
UNIT = "sglang-qwen.service"

WRITER = r"""
import sys
from logdoctor.history import History, AttemptRow
spec, tag, n, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
import time
h = History(spec)
for i in range(n):
    h.record([AttemptRow(key=f"{tag}-{i}", host=f"host-{tag}", unit="sglang-qwen.service", phase="memory_pool",
                         outcome="failed", cause="kv_cache_oom", config={"mem_fraction": 0.88, "i": i})])
    if pause:
        time.sleep(pause)
for w in h.warnings:
    print("warning:", w, file=sys.stderr)
h.close()
print("done", n)
"""


@pytest.fixture(scope="module")
def cluster():
    why = why_no_server()
    if why:
        pytest.skip(why)
    c = PgCluster.start()
    yield c
    c.destroy()


@pytest.fixture(params=["sqlite", "postgres"])
def spec(request, tmp_path, monkeypatch):
    """The store's spec (an SQLite path or a postgresql:// URL of a fresh database), also exported as
    LOGDOCTOR_HISTORY for subprocesses; the state dir (the spool's home) is private to the test."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    if request.param == "sqlite":
        s = str(tmp_path / "history.db")
    else:
        s = request.getfixturevalue("cluster").new_database()
    monkeypatch.setenv("LOGDOCTOR_HISTORY", s)
    return s


def cli(*args, cwd=ROOT, env=None, **kw):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, **kw)


def explain_json(*args):
    p = cli("explain", "--format", "json", *args)
    assert p.returncode in (0, 1, 3), p.stderr
    return p.returncode, json.loads(p.stdout), p.stderr


def seed(name: str) -> str:
    return (SEED / name / "journal.log").read_text()


def healthy_on(host: str) -> str:
    """The attempt-3 configuration coming up on another host earlier that day (as in test_hook_story)."""
    from test_hook_story import healthy_on_ct200

    return healthy_on_ct200().replace("ct200", host)


# ------------------------------------------------------------------------------------------------ the store itself


def test_record_is_idempotent_and_updates_in_place(spec):
    with History(spec) as h:
        row = AttemptRow(key="k1", host="ct100", unit="u.service", outcome="in_progress", phase="weight_load")
        assert h.record([row]) == 1
        row2 = AttemptRow(
            key="k1",
            host="ct100",
            unit="u.service",
            outcome="failed",
            phase="memory_pool",
            cause="kv_cache_oom",
            fix={"lever": "mem_fraction", "to": 0.92},
        )
        assert h.record([row2]) == 0
        assert (
            h.record(
                [
                    AttemptRow(
                        key="k1",
                        host="ct100",
                        unit="u.service",
                        outcome="failed",
                        phase="memory_pool",
                        cause="kv_cache_oom",
                    )
                ]
            )
            == 0
        )
        [r] = h.query()
        assert (r.outcome, r.phase, r.fix) == ("failed", "memory_pool", {"lever": "mem_fraction", "to": 0.92})
        assert r.started is None and r.updated >= r.recorded


def test_values_are_parameters_not_sql(spec):
    evil = "x'; DROP TABLE attempts; -- %s ? $1"
    with History(spec) as h:
        h.record([AttemptRow(key=evil, host=evil, unit=evil, outcome="failed")])
        assert [r.host for r in h.query(host=evil)] == [evil]
        assert h.count() == 1


def test_bounded_questions(spec):
    """The reasoning's questions return bounded answers from a long history: the latest attempts here (before the
    current one), distinct tried configs, ready attempts elsewhere, and the hosts with a verdict."""
    rows = [
        AttemptRow(
            key=f"a{i:04d}",
            host="ct100",
            unit=UNIT,
            outcome="failed",
            cause="kv_cache_oom",
            started=f"2026-05-22T10:{i // 60:02d}:{i % 60:02d}",
            config={"mem_fraction": (0.8, 0.81, 0.82)[i % 3]},
        )
        for i in range(300)
    ]
    rows += [AttemptRow(key=f"b{i}", host=f"ct2{i:02d}", unit=UNIT, outcome="ready", config={}) for i in range(5)]
    rows += [
        AttemptRow(key=f"c{i}", host=f"gpu{i}", unit=UNIT, outcome="failed", cause="hardware_fault", rule="any.gpu.xid")
        for i in range(3)
    ]
    with History(spec) as h:
        h.record(rows)
        here = h.recent_here("ct100", UNIT, started_before="2026-05-22T10:04:10", limit=10)
        assert [r.key for r in here] == [f"a{i:04d}" for i in range(240, 250)]
        assert h.count_here("ct100", UNIT, started_before="2026-05-22T10:04:10") == 250
        assert sorted(c["mem_fraction"] for c in h.tried_here("ct100", UNIT)) == [0.8, 0.81, 0.82]
        assert [r.host for r in h.ready_elsewhere(UNIT, "ct100", limit=2)] == ["ct203", "ct204"]
        assert h.verdict_hosts("hardware_fault", "any.gpu.xid", time.time() - 60) == ["gpu0", "gpu1", "gpu2"]
        assert h.verdict_hosts("hardware_fault", "other", time.time() - 60) == []
        assert set(h.get(["a0001", "b3", "nope"])) == {"a0001", "b3"}
        page = h.page(unit=UNIT, limit=5, offset=3)
        assert len(page) == 5 and page[0].started <= page[-1].started


def test_forget_refuses_empty_or_wildcard_keys(spec):
    with History(spec) as h:
        h.record(
            [
                AttemptRow(key=f"c0ffee00{i:02d}" + "0" * 22, host="ct100", unit=UNIT, outcome="failed")
                for i in range(20)
            ]
        )
    for key in ("", "   ", "%", "_", "0000"):
        p = cli("history", "forget", "--key", key)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (key, p.stderr)
        assert "key" in p.stderr and "URL" not in p.stderr, p.stderr
    p = cli("history", "forget", "--key", "c0ffee00")  # a prefix that names 20 attempts
    assert p.returncode == 2 and "more than one" in p.stderr
    assert cli("history", "forget", "--key", "c0ffee0019").stdout.strip() == "forgot 1 attempt"
    assert cli("history", "forget", "--key", "c0ffee0018" + "0" * 22).stdout.strip() == "forgot 1 attempt"
    assert cli("history", "forget", "--host", "").returncode == 2
    with History(spec) as h:
        assert h.count() == 18


def test_listing_is_paged_and_filtered(spec):
    with History(spec) as h:
        h.record(
            [
                AttemptRow(
                    key=f"k{i:03d}",
                    host="ct100" if i % 2 else "ct200",
                    unit=UNIT,
                    outcome="failed",
                    started=f"2026-05-22T11:{i // 60:02d}:{i % 60:02d}",
                )
                for i in range(120)
            ]
        )
    p = cli("history")
    lines = p.stdout.splitlines()
    assert len(lines) == 51 and lines[-1].startswith("k119") and "showing 50 of 120" in p.stderr
    p = cli("history", "--limit", "3", "--offset", "2", "--format", "json")
    assert [r["key"] for r in json.loads(p.stdout)["attempts"]] == ["k115", "k116", "k117"]
    doc = json.loads(cli("history", "--host", "ct100", "--format", "json").stdout)
    assert len(doc["attempts"]) == 60  # json streams every match
    assert json.loads(cli("history", "--since", "tomorrow", "--format", "json").stdout)["attempts"] == []
    assert len(json.loads(cli("history", "--since", "-1h", "--format", "json").stdout)["attempts"]) == 120


def test_four_processes_of_500_attempts_lose_nothing(spec):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, spec, tag, "500", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for tag in "abcd"
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "done 500", err
        assert "warning" not in err, err
    with History(spec) as h:
        assert h.count() == 2000
        assert [s.attempts for s in h.hosts()] == [500] * 4


# -------------------------------------------------------------------------------------------- fleet reasoning


def _story(tmp_path) -> list[dict]:
    """A healthy start on ct200, then the seed story's three attempts on ct100 (attempt 3 without its Xid lines, so
    that only the history escalates it): the verdicts, as explain --format json prints them."""
    from test_hook_story import attempt3_without_xid

    logs = {
        "ct200-ok": healthy_on("ct200"),
        "a1": seed("seed-attempt1-kv-oom").replace("h200-qwen-03", "ct100"),
        "a2": seed("seed-attempt2-capture-unsafe").replace("h200-qwen-03", "ct100"),
        "a3": attempt3_without_xid().replace("h200-qwen-03", "ct100"),
    }
    docs = []
    for name, text in logs.items():
        f = tmp_path / f"{name}.log"
        f.write_text(text)
        docs.append(explain_json(f)[1])
    return docs


def _verdict(d: dict) -> dict:
    return {
        k: d.get(k)
        for k in (
            "failed",
            "cause",
            "rule",
            "phase",
            "confidence",
            "fixes",
            "actions",
            "notes",
            "history",
            "alternatives",
        )
    }


def test_two_host_story_gives_the_same_verdicts_on_both_stores(tmp_path, monkeypatch, request):
    why = why_no_server()
    if why:
        pytest.skip(why)
    c = request.getfixturevalue("cluster")
    runs = {}
    for kind in ("sqlite", "postgres"):
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / kind / "state"))
        (tmp_path / kind).mkdir()
        spec = str(tmp_path / kind / "h.db") if kind == "sqlite" else c.new_database()
        monkeypatch.setenv("LOGDOCTOR_HISTORY", spec)
        runs[kind] = [_verdict(d) for d in _story(tmp_path / kind)]
        rows = json.loads(cli("history", "--format", "json").stdout)["attempts"]
        assert [(r["host"], r["outcome"], r["cause"]) for r in rows] == [
            ("ct200", "ready", None),
            ("ct100", "failed", "kv_cache_oom"),
            ("ct100", "failed", "graph_capture_fault"),
            ("ct100", "failed", "hardware_fault"),
        ]
        hosts = {h["host"]: h for h in json.loads(cli("history", "hosts", "--format", "json").stdout)["hosts"]}
        assert (hosts["ct100"]["attempts"], hosts["ct100"]["failures"], hosts["ct100"]["suspect"]) == (3, 3, True)
        assert hosts["ct100"]["hardware_rule"] == "history.same-host-regression"
        assert (hosts["ct200"]["attempts"], hosts["ct200"]["suspect"]) == (1, False)
        table = cli("history", "hosts").stdout
        assert table.splitlines()[0].split()[:3] == ["host", "attempts", "failures"] and "yes" in table
    assert runs["sqlite"] == runs["postgres"]
    third = runs["postgres"][3]
    assert third["cause"] == "hardware_fault" and third["rule"] == "history.same-host-regression"
    assert third["fixes"] == [] and third["history"]["attempts_here"] == 2
    [cited] = third["history"]["healthy_elsewhere"]
    assert cited["host"] == "ct200" and cited["same_flags"] and cited["key"]
    assert any("came up on ct200" in a for a in third["actions"])


def test_circuit_breaker_on_the_same_hardware_verdict_across_hosts(spec, tmp_path):
    log = SEED / "seed-attempt3-hardware" / "journal.log"
    _, alone, _ = explain_json(log, "--no-history")
    assert alone["cause"] == "hardware_fault"
    with History(spec) as h:
        h.record(
            [
                AttemptRow(
                    key=f"hw{i}",
                    host=f"gpu-node-{i}",
                    unit=UNIT,
                    outcome="failed",
                    cause="hardware_fault",
                    rule=alone["rule"],
                )
                for i in range(2)
            ]
        )
    _, d, _ = explain_json(log)  # 3 hosts with it: below the breaker's 4
    assert d["confidence"] == alone["confidence"] and d["history"]["fleet"] is None
    with History(spec) as h:
        h.record(
            [
                AttemptRow(
                    key="hw9",
                    host="gpu-node-9",
                    unit=UNIT,
                    outcome="failed",
                    cause="hardware_fault",
                    rule=alone["rule"],
                )
            ]
        )
    _, d, _ = explain_json(log)
    assert d["cause"] == "hardware_fault" and d["confidence"] <= 0.5
    assert d["history"]["fleet"]["hosts"] == ["gpu-node-0", "gpu-node-1", "gpu-node-9", "h200-qwen-03"]
    assert any(n.startswith("fleet: the same hardware verdict") and "software or driver" in n for n in d["notes"])
    assert not any("drain" in a.lower() and not a.startswith("before draining") for a in d["actions"])
    hosts = {h["host"]: h for h in json.loads(cli("history", "hosts", "--format", "json").stdout)["hosts"]}
    assert all(hosts[x]["fleet_wide"] and not hosts[x]["suspect"] for x in d["history"]["fleet"]["hosts"])
    assert "fleet-wide" in cli("history", "hosts").stdout


# ----------------------------------------------------------------------------------- PostgreSQL: never lose one


def test_a_url_is_never_a_file_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("LOGDOCTOR_HISTORY_CONNECT_TIMEOUT", "2")
    url = f"postgresql:///nodb?host={tmp_path / 'nosock'}&user=postgres"
    p = cli("explain", "--history", url, SEED / "seed-attempt1-kv-oom" / "journal.log", cwd=tmp_path)
    if "needs psycopg" in p.stderr:
        pytest.skip("psycopg is not installed")
    assert p.returncode == 1 and p.stdout.startswith("FAILED"), p.stderr
    [warning] = p.stderr.strip().splitlines()
    assert "cannot be reached" in warning and "spooled" in warning
    assert not (tmp_path / "postgresql:").exists() and sorted(os.listdir(tmp_path)) == ["state"]


def test_unreachable_server_spools_and_the_next_run_replays(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    url = cluster.new_database()
    monkeypatch.setenv("LOGDOCTOR_HISTORY", url)
    a1, a2 = SEED / "seed-attempt1-kv-oom" / "journal.log", SEED / "seed-attempt2-capture-unsafe" / "journal.log"
    cluster.stop()
    try:
        rc, doc, err = explain_json(a1)
        assert (rc, doc["cause"]) == (1, "kv_cache_oom")
        assert len(err.strip().splitlines()) == 1 and "spooled" in err
        p = cli("history", "sync")
        assert p.returncode == 2 and "1 attempt stays spooled" in p.stderr
    finally:
        cluster.start_again()
    rc, doc, err = explain_json(a2)  # reaches the server: the spool goes first
    assert err == "" and doc["cause"] == "graph_capture_fault"
    assert doc["history"]["attempts_here"] == 1  # attempt 1, replayed, is known
    got = cluster.rows(url, "SELECT cause FROM attempts ORDER BY started")
    assert got == [("kv_cache_oom",), ("graph_capture_fault",)]
    assert cli("history", "sync").stdout.strip().startswith("replayed 0 spooled attempts")


def test_killing_the_server_mid_run_loses_nothing(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("LOGDOCTOR_HISTORY_CONNECT_TIMEOUT", "2")
    url = cluster.new_database()
    History(url).close()  # the schema, before the writers race to it
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, tag, "150", "0.01"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for tag in "ab"
    ]
    try:
        deadline = time.monotonic() + 60
        while cluster.rows(url, "SELECT COUNT(*) FROM attempts")[0][0] < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.stop("immediate")  # as a crash: no shutdown checkpoint, connections cut
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        cluster.start_again()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and out.strip() == "done 150", err
    assert any("spooled" in err for _, err in outs)
    on_server = cluster.rows(url, "SELECT COUNT(*) FROM attempts")[0][0]
    assert 20 <= on_server < 300
    p = cli("history", "--history", url, "sync")
    assert p.returncode == 0 and p.stdout.startswith("replayed "), p.stderr
    assert cluster.rows(url, "SELECT COUNT(*), COUNT(DISTINCT key) FROM attempts")[0] == (300, 300)
    assert cli("history", "--history", url, "sync").stdout.startswith("replayed 0 ")


# ------------------------------------------------------------------------- SQLite files that are not ours (F14, F20)


def _v2_db(path: Path, sql: str) -> None:
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 2")
    con.execute(sql)
    con.commit()
    con.close()


@pytest.mark.parametrize("sql", ["CREATE TABLE other(x)", "CREATE TABLE attempts(key TEXT PRIMARY KEY, x)"])
def test_a_known_version_with_the_wrong_tables(tmp_path, monkeypatch, sql):
    log = SEED / "seed-attempt1-kv-oom" / "journal.log"
    db = tmp_path / "notable.db"
    _v2_db(db, sql)
    p = cli("explain", "--history", db, log)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "not a logdoctor history database" in p.stderr and "Traceback" not in p.stderr
    env = dict(os.environ, LOGDOCTOR_HISTORY=str(db))
    p = cli("explain", log, env=env)
    assert p.returncode == 1 and p.stdout.startswith("FAILED")
    [warning] = p.stderr.strip().splitlines()
    assert warning.startswith("logdoctor: warning: ") and "continuing without the attempt history" in warning


def test_a_foreign_database_is_not_migrated(tmp_path):
    db = tmp_path / "otherapp.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE bookmarks(url TEXT)")
    con.commit()
    con.close()
    p = cli("explain", "--history", db, SEED / "seed-attempt1-kv-oom" / "journal.log")
    assert p.returncode == 2 and "another program" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 0
    assert [t[0] for t in con.execute("SELECT name FROM sqlite_master")] == ["bookmarks"]


def test_paths_that_cannot_be_a_database_say_why(tmp_path):
    log = SEED / "seed-attempt1-kv-oom" / "journal.log"
    (tmp_path / "notadir").write_text("x")
    for path, words in (
        ("/dev/null", "not a regular file"),
        (tmp_path / "notadir" / "x.db", "is a file, not a folder"),
        (tmp_path, "a folder"),
    ):
        p = cli("explain", "--history", path, log)
        assert p.returncode == 2 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_untimed_attempts_with_one_beginning_get_two_rows(tmp_path):
    """Two logs without times or hosts, the same first 30 lines, different failures: two attempts (F20)."""
    import re

    lines = seed("seed-attempt1-kv-oom").splitlines()
    raw = [re.sub(r"^\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ [^:]+: (\[[^\]]*\] )?", "", line) for line in lines]
    one = tmp_path / "raw1.log"
    one.write_text("\n".join(raw) + "\n")
    two = tmp_path / "raw2.log"
    two.write_text(
        "\n".join(
            raw[:35]
            + [
                "Traceback (most recent call last):",
                '  File "/sgl/srt/server.py", line 10, in launch',
                "zmq.error.ZMQError: Address already in use",
            ]
        )
        + "\n"
    )
    db = tmp_path / "col.db"
    causes = [explain_json("--history", db, f)[1]["cause"] for f in (one, two)]
    assert causes[0] != causes[1]
    with History(db) as h:
        rows = h.query()
    assert len(rows) == 2 and {r.cause for r in rows} == set(causes)


# ------------------------------------------------------------------------------ watch: a unit that does not exist


def test_watch_on_an_unknown_unit_exits_2_at_once(tmp_path):
    """Newcomer problem 8: a misspelled unit (no journal entries, no unit file) is a usage error now, not a 900 s
    wait that ends in 'timed out'."""
    pytest.importorskip("systemd")
    from hookstory import entries_from_short
    from journal_export import journal_remote, make_journal

    if journal_remote() is None:
        pytest.skip("systemd-journal-remote is not installed")
    journal = make_journal(
        entries_from_short(seed("seed-attempt1-kv-oom"), unit=UNIT, host="ct100"), tmp_path / "w.journal"
    )
    t0 = time.monotonic()
    p = cli("watch", "nosuch", "--journal-file", journal, "--timeout", "60", "--no-history")
    assert p.returncode == 2 and time.monotonic() - t0 < 20
    assert p.stderr.strip() == "logdoctor: no journal entries and no unit file for nosuch.service: is the name right?"
    p = cli("watch", "sglang-qwen", "--journal-file", journal, "--timeout", "20", "--no-history")
    assert p.returncode == 1 and "kv_cache_oom" in p.stdout, p.stderr  # the real name is followed as before


def test_a_password_in_the_url_is_never_printed(tmp_path, monkeypatch):
    pytest.importorskip("psycopg")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    url = "postgresql://ld:s3cret-pw@/nodb?host=/nonexistent"
    p = cli("explain", "--history", url, SEED / "seed-attempt1-kv-oom" / "journal.log", cwd=tmp_path)
    assert p.returncode == 1 and "s3cret" not in p.stderr + p.stdout
    assert "postgresql://ld:***@/nodb?host=/nonexistent cannot be reached" in p.stderr
    [spool] = (tmp_path / "state" / "logdoctor" / "spool").glob("*.db")
    assert "s3cret" not in spool.name
