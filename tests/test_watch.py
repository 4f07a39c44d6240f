"""`logdoctor watch` on real journal files that grow while it reads them (a writer process appends through
systemd-journal-remote), with a real HTTP health endpoint on 127.0.0.1, a timeout and Ctrl-C."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from checks import read_pty
from hookstory import entries_from_short
from journal_export import journal_remote, make_journal, write_export

import logdoctor

ROOT = Path(__file__).resolve().parent.parent
KV_LOG = ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log"
UNIT = "sglang-qwen.service"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(journal_remote() is None, reason="systemd-journal-remote is not installed"),
]

# appends the entries of an export file to a journal file in batches (journal-remote appends to an existing file);
# after the last batch it waits `tail_wait` seconds and appends the tail batch (a restart that watch must not wait for)
WRITER = r"""
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from journal_export import journal_remote, read_export, write_export
journal, export, batch, pause, tail_wait, tail_export = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
def append(entries):
    subprocess.run([journal_remote(), "-o", journal, "-"], input=write_export(entries), check=True,
                   capture_output=True)
entries = read_export(open(export, "rb").read())
for i in range(0, len(entries), batch):
    time.sleep(pause)
    append(entries[i:i + batch])
    print("wrote", min(i + batch, len(entries)), flush=True)
if tail_export != "-":
    time.sleep(tail_wait)
    append(read_export(open(tail_export, "rb").read()))
    print("wrote tail", flush=True)
"""


def watch_cli(*args, **kw):
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(
        [sys.executable, "-m", "logdoctor", "watch", UNIT, "--no-history", *map(str, args)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        **kw,
    )


def story(tmp_path, head: int, rest_upto: int | None = None):
    """The journal file starts with the first `head` entries of attempt 1 (its start); the rest goes to an export
    file for the writer."""
    # times in the past: journal-remote refuses to append to a file "from the future"
    entries = entries_from_short(KV_LOG.read_text(), unit=UNIT, host="ct100", shift_to=time.time() - 3600)
    path = make_journal(entries[:head], tmp_path / "grow.journal")
    rest = tmp_path / "rest.export"
    rest.write_bytes(write_export(entries[head:rest_upto]))
    return path, rest, entries


def start_writer(tmp_path, journal, export, *, batch=8, pause=0.25, tail_wait=0.0, tail="-"):
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(ROOT / "tests"),
            str(journal),
            str(export),
            str(batch),
            str(pause),
            str(tail_wait),
            str(tail),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_watch_follows_a_growing_file_and_stops_on_the_failure(tmp_path):
    journal, rest, entries = story(tmp_path, head=4)
    # after the failure, the writer waits 40 s and then appends a restart: watch must not wait for it
    restart = tmp_path / "restart.export"
    restart.write_bytes(write_export([dict(entries[0], __REALTIME_TIMESTAMP=str(int(time.time() * 1e6) - 60_000_000))]))
    t0 = time.monotonic()
    w = watch_cli("--journal-file", journal, "--timeout", "90", "--format", "json")
    time.sleep(0.5)  # watch is reading the 4-entry file before the writer adds anything
    writer = start_writer(tmp_path, journal, rest, tail_wait=40, tail=restart)
    try:
        out, err = w.communicate(timeout=80)
        took = time.monotonic() - t0
        assert writer.poll() is None  # the writer is still waiting to append the restart
    finally:
        writer.kill()
        writer.wait()
    assert w.returncode == 1, err
    doc = json.loads(out)
    import jsonschema

    schema = json.loads((ROOT / "logdoctor" / "schemas" / "diagnosis.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["cause"] == "kv_cache_oom" and doc["phase"] == "memory_pool"
    assert doc["fixes"][0]["flag"] == "--mem-fraction-static" and doc["fixes"][0]["to"] == 0.92
    assert doc["watch"]["outcome"] == "failed"
    assert doc["watch"]["entries"] == len(entries)  # it picked up everything the writer appended
    assert took < 30, took  # well before the 90 s timeout and the 40 s restart


def test_watch_is_ready_when_the_health_url_answers_200(tmp_path):
    journal, rest, _ = story(tmp_path, head=4, rest_upto=30)  # loading weights; no ready line, no failure
    state = {"ok_at": time.monotonic() + 2.0, "hits": 0}

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            state["hits"] += 1
            code = 200 if self.path == "/health" and time.monotonic() >= state["ok_at"] else 503
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    writer = start_writer(tmp_path, journal, rest, batch=5, pause=0.2)
    try:
        t0 = time.monotonic()
        w = watch_cli(
            "--journal-file",
            journal,
            "--timeout",
            "60",
            "--health-url",
            f"http://127.0.0.1:{srv.server_address[1]}/health",
        )
        out, err = w.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        srv.shutdown()
        srv.server_close()
        writer.wait(timeout=30)
    assert w.returncode == 0, err
    assert out.startswith(f"READY  {UNIT}: http://127.0.0.1:") and "answered 200" in out
    assert 1.5 < took < 20, took
    assert state["hits"] >= 2  # it polled (503s) before the 200


def test_watch_times_out_with_exit_5(tmp_path):
    journal, _, _ = story(tmp_path, head=20)
    t0 = time.monotonic()
    w = watch_cli("--journal-file", journal, "--timeout", "1.5")
    out, err = w.communicate(timeout=30)
    assert w.returncode == 5, err
    assert out.startswith("TIMED OUT") and "weight_load" in out
    assert time.monotonic() - t0 < 15


def test_ctrl_c_exits_130_without_a_traceback(tmp_path):
    journal, _, _ = story(tmp_path, head=20)
    w = watch_cli("--journal-file", journal, "--timeout", "120")
    time.sleep(1.5)
    w.send_signal(signal.SIGINT)
    out, err = w.communicate(timeout=30)
    assert w.returncode == 130
    assert "interrupted" in err and "Traceback" not in err


def test_api_watch_returns_the_diagnosis(tmp_path, history_db):
    entries = entries_from_short(KV_LOG.read_text(), unit=UNIT, host="ct100")
    journal = make_journal(entries, tmp_path / "done.journal")
    r = logdoctor.watch("sglang-qwen", timeout=20, journal=journal, history=history_db)
    assert (r.outcome, r.exit_code, r.cause, r.failed) == ("failed", 1, "kv_cache_oom", True)
    assert r.to_dict()["watch"]["outcome"] == "failed"
    from logdoctor.history import History

    with History(history_db) as h:
        assert [(x.host, x.unit, x.cause) for x in h.query()] == [("ct100", UNIT, "kv_cache_oom")]
    with pytest.raises(logdoctor.UsageError):
        logdoctor.watch("sglang-qwen", timeout=0, journal=journal)
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "logdoctor",
            "watch",
            UNIT,
            "--journal-file",
            str(tmp_path / "nope.journal"),
            "--timeout",
            "5",
        ],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_watch_follows_the_latest_start_not_an_earlier_failure(tmp_path):
    """A failed attempt, then systemd starts the unit again: watch is about the new start (still loading → timeout),
    not the old failure."""
    old = entries_from_short(KV_LOG.read_text(), unit=UNIT, host="ct100", shift_to=time.time() - 7200)
    new = entries_from_short(KV_LOG.read_text(), unit=UNIT, host="ct100", shift_to=time.time() - 3600)[:15]
    journal = make_journal(old + new, tmp_path / "restart.journal")
    w = watch_cli("--journal-file", journal, "--timeout", "1.5", "--format", "json")
    out, err = w.communicate(timeout=30)
    assert w.returncode == 5, err
    doc = json.loads(out)
    assert doc["watch"]["outcome"] == "timeout" and doc["watch"]["entries"] == 15
    assert doc["failed"] is False


def test_watch_follows_a_journal_directory(tmp_path):
    journal, rest, entries = story(tmp_path, head=4)
    jdir = tmp_path / "dir"
    jdir.mkdir()
    moved = jdir / "system.journal"
    journal.rename(moved)
    w = watch_cli("--journal-dir", jdir, "--timeout", "60", "--format", "json")
    time.sleep(0.5)
    writer = start_writer(tmp_path, moved, rest)
    try:
        out, err = w.communicate(timeout=60)
    finally:
        writer.wait(timeout=60)
    assert w.returncode == 1, err
    assert json.loads(out)["watch"]["entries"] == len(entries)


def test_status_line_on_a_terminal(tmp_path):
    """On a TTY, stderr carries one status line rewritten in place (\\r): unit, phase, each rank's phase, seconds."""
    import os
    import pty

    journal, _, _ = story(tmp_path, head=20)
    master, slave = pty.openpty()
    w = watch_cli("--journal-file", journal, "--timeout", "2.5", stderr=slave)
    os.close(slave)
    tty = read_pty(master).decode("utf-8", "replace")
    w.wait(timeout=30)
    os.close(master)
    assert w.returncode == 5
    frames = [f for f in tty.split("\r") if f.strip()]
    assert len(frames) >= 2 and "\n" not in "".join(frames[:-1])  # one line, rewritten
    assert frames[0].startswith(f"{UNIT}  weight_load  TP0 weight_load · TP1 weight_load")
    assert all(len(f.rstrip()) < 80 for f in frames[:-1])  # fits the terminal
    assert re.search(r"  [12]s\s*$", "\n".join(frames[:-1]))  # the elapsed time ticks
