"""Outputs never replace what is not a regular file (logdoctor/core/atomic.py; hostile-inputs F4, newcomer-trial 1).

Real device nodes (mknod, as root), FIFOs and symlinks, through the CLI (`fix --out`) and the writer itself."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from logdoctor.core.atomic import ChangedError, WriteError, seen, write_bytes

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "tests" / "data" / "hook" / "sglang-qwen.service"
KV_LOG = ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log"

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")


def fix_out(out, *extra, env=None):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "logdoctor",
            "fix",
            str(UNIT),
            "--log",
            str(KV_LOG),
            "--no-history",
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env=env,
    )


@root_only
def test_out_to_a_null_device_streams_and_keeps_the_node(tmp_path):
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    p = fix_out(null)
    assert p.returncode == 1, p.stderr
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3
    assert sorted(x.name for x in tmp_path.iterdir()) == ["null"]  # no temporary left beside it


@root_only
def test_out_to_a_full_device_is_one_line_exit_2(tmp_path):
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full: every write fails with ENOSPC
    p = fix_out(full)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "No space left" in p.stderr, p.stderr
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_out_dev_stdout_and_dash_are_streams(tmp_path):
    p = fix_out("-")
    assert p.returncode == 1 and "--mem-fraction-static 0.92" in p.stdout
    p = fix_out("/dev/stdout")
    assert p.returncode == 1 and "--mem-fraction-static 0.92" in p.stdout, p.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_out_to_a_fifo_is_a_stream(tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    p = fix_out(fifo)
    reader.join(timeout=60)
    assert p.returncode == 1, p.stderr
    assert b"--mem-fraction-static 0.92" in got[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_symlink_stays_a_link_and_its_target_is_replaced(tmp_path):
    real = tmp_path / "reports" / "next.service"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.service"
    link.symlink_to(Path("reports") / "next.service")
    p = fix_out(link)
    assert p.returncode == 1, p.stderr
    assert link.is_symlink() and os.readlink(link) == "reports/next.service"
    assert "--mem-fraction-static 0.92" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    dangling = tmp_path / "dangling.service"
    dangling.symlink_to("reports/new.service")
    assert fix_out(dangling).returncode == 1
    assert dangling.is_symlink() and "--mem-fraction-static 0.92" in (real.parent / "new.service").read_text()


def test_a_folder_is_refused_in_one_line(tmp_path):
    p = fix_out(tmp_path)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr


def test_a_target_changed_since_it_was_read_is_refused(tmp_path):
    f = tmp_path / "x.conf"
    f.write_text("one\n")
    before = seen(f)
    write_bytes(f, b"two\n", expect=before)  # unchanged since read: replaced
    with pytest.raises(ChangedError) as ei:
        write_bytes(f, b"three\n", expect=before)  # now it differs from what was read
    assert "since it was read" in str(ei.value) and ei.value.exit_code == 2
    assert f.read_text() == "two\n"
    with pytest.raises(ChangedError):
        write_bytes(tmp_path / "new.conf", b"x", expect=seen(f))  # read as existing, now absent
    absent = seen(tmp_path / "later.conf")
    (tmp_path / "later.conf").write_text("someone else\n")
    with pytest.raises(ChangedError):
        write_bytes(tmp_path / "later.conf", b"x", expect=absent)
    assert (tmp_path / "later.conf").read_text() == "someone else\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["later.conf", "x.conf"]


def test_private_writes_never_follow_a_planted_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("VICTIM\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "entry.json").symlink_to(victim)
    write_bytes(cache / "entry.json", b"{}", mode=0o600, private=True)
    assert victim.read_text() == "VICTIM\n"
    assert not (cache / "entry.json").is_symlink() and (cache / "entry.json").read_bytes() == b"{}"
    with pytest.raises(WriteError):
        write_bytes(cache, b"x", private=True)


def test_rule_cache_stat_note_ignores_planted_links_and_foreign_notes(tmp_path):
    """F4: the stat note goes through the atomic writer (a planted symlink at the note or any temp name is never
    written through) and is read only when it is this user's file, mode not group/world-writable."""
    cache = tmp_path / "c"
    env = dict(os.environ, LOGDOCTOR_CACHE_DIR=str(cache))
    run = [sys.executable, "-m", "logdoctor", "explain", "--no-history", str(KV_LOG)]
    assert subprocess.run(run, capture_output=True, env=env, cwd=ROOT, timeout=120).returncode == 1
    notes = sorted(cache.glob("stat-*.key"))
    assert notes and all(stat.S_IMODE(n.stat().st_mode) == 0o600 for n in notes)
    victim = tmp_path / "victim.txt"
    victim.write_text("VICTIM ORIGINAL\n")
    for n in notes:
        n.unlink()
        n.symlink_to(victim)
        last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        for pid in range(last + 1, last + 300):  # the old code's predictable temp names for the next pids
            tmp = n.with_suffix(f".{pid}.tmp")
            if not tmp.exists():
                tmp.symlink_to(victim)
    p = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert p.returncode == 1, p.stderr
    assert victim.read_text() == "VICTIM ORIGINAL\n"
    good = {n.name: n.read_text() for n in cache.glob("stat-*.key") if not n.is_symlink()}
    assert good and all(v.split()[1] != "f" * 32 for v in good.values())
    # a note another user could have written is not believed: it is rewritten, ours, 0600, with the true key
    for name, text in good.items():
        (cache / name).write_text(text.split()[0] + " " + "f" * 32 + "\n")
        (cache / name).chmod(0o666)
    p2 = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert p2.returncode == 1 and p2.stdout == p.stdout
    for name, text in good.items():
        assert (cache / name).read_text() == text and stat.S_IMODE((cache / name).stat().st_mode) == 0o600


@root_only
def test_triage_out_to_a_null_device_keeps_the_node(tmp_path):
    """newcomer-trial problem 1, as reported: `triage … --format csv --out /dev/null` made /dev/null a file."""
    pytest.importorskip("pandas", reason="triage needs logdoctor[triage]")
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "triage", str(KV_LOG.parent), "--format", "csv", "--out", str(null)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode) and sorted(x.name for x in tmp_path.iterdir()) == ["null"]
