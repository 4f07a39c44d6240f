"""The paths that read or write the running system journal, against a real systemd-journald (issue 22, point 6).

In a private mount namespace (`unshare -m`): tmpfs on /run/systemd, /run/log and /var/log/journal, our own
journald.conf bind-mounted (volatile storage, no kernel ring buffer), then /lib/systemd/systemd-journald started.
The "service" is a Python process moved into the cgroup2 group /system.slice/UNIT, so journald stamps its lines with
_SYSTEMD_UNIT=UNIT exactly as for a real unit; it logs the seed story's first attempt with journal.send. Checked:
`explain --unit` reads it back from the live journal, `watch` follows it through a journal rotation
(`journalctl --rotate` halfway) and stops on the failure, and `notify` writes its LOGDOCTOR_* fields through
journal.send, read back with `journalctl`. Skipped, with the reason, where any of that is not permitted here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log"
JOURNALD = Path("/lib/systemd/systemd-journald")
CGROUP2 = (
    Path("/sys/fs/cgroup/unified") if Path("/sys/fs/cgroup/unified/cgroup.procs").exists() else Path("/sys/fs/cgroup")
)

JOURNALD_CONF = """[Journal]
Storage=volatile
ReadKMsg=no
ForwardToSyslog=no
ForwardToWall=no
ForwardToKMsg=no
ForwardToConsole=no
"""

# the service: the engine's own lines of the seed log (systemd's and the kernel's lines come from PID 1 and the
# kernel in real life; those fields cannot be forged), sent one by one; a rotation halfway when asked
SERVICE = r"""
import re, subprocess, sys, time
from systemd import journal
lines = open(sys.argv[1]).read().splitlines()
pause, rotate_at = float(sys.argv[2]), int(sys.argv[3])
pat = re.compile(r"^\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ (?P<ident>[^\s\[:]+)(?:\[\d+\])?: ?(?P<msg>.*)$")
n = 0
for line in lines:
    m = pat.match(line)
    if not m or m["ident"] in ("systemd", "kernel"):
        continue
    journal.send(m["msg"], SYSLOG_IDENTIFIER=m["ident"])
    n += 1
    if n == rotate_at:
        subprocess.run(["journalctl", "--rotate"], check=True)
    if pause:
        time.sleep(pause)
time.sleep(0.5)   # journald reads the sender's cgroup while it is alive
print(n)
"""

SCRIPT = r"""
set -e
T="$1"; PY="$2"; UNIT="$3"; CG="$4"
mount -t tmpfs tmpfs /run/systemd
mkdir -p /run/log /var/log/journal
mount -t tmpfs tmpfs /run/log
mount -t tmpfs tmpfs /var/log/journal
mount --bind "$T/journald.conf" /etc/systemd/journald.conf
mkdir -p /run/systemd/journal
/lib/systemd/systemd-journald > "$T/journald.out" 2>&1 &
JPID=$!
trap 'kill $JPID 2>/dev/null; wait $JPID 2>/dev/null; rmdir "$CG" 2>/dev/null; true' EXIT
for i in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
service() {  # the unit's process: in its cgroup, as systemd would have put it
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$CG" "$PY" -c "$(cat "$T/service.py")" "$@"
}
# 1. explain --unit on the live journal
service "$T/seed.log" 0 0 > "$T/sent1"
set +e
"$PY" -m logdoctor explain --unit "$UNIT" --no-history --format json > "$T/explain.json" 2> "$T/explain.err"
echo $? > "$T/explain.rc"
# 2. watch on the system journal: the unit's first lines are there, the rest arrive while it follows, the journal
# rotates halfway
"$PY" -m logdoctor notify "$UNIT" --no-history > "$T/notify.out" 2> "$T/notify.err"
echo $? > "$T/notify.rc"
journalctl --no-pager -o json SYSLOG_IDENTIFIER=logdoctor > "$T/notify.json"
journalctl --rotate
"$PY" -m logdoctor watch "$UNIT" --since now --timeout 60 --no-history --format json > "$T/watch.json" \
  2> "$T/watch.err" &
WPID=$!
sleep 1
service "$T/seed.log" 0.02 20 > "$T/sent2"
wait $WPID
echo $? > "$T/watch.rc"
ls /run/log/journal/*/ > "$T/files"
"""


def why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (mount namespaces, cgroups)"
    if not JOURNALD.exists() or shutil.which("journalctl") is None or shutil.which("unshare") is None:
        return "systemd-journald, journalctl or unshare is not installed"
    try:
        import systemd.journal  # noqa: F401
    except ImportError:
        return "systemd-python is not installed"
    p = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /run/systemd"], capture_output=True)
    if p.returncode != 0:
        return f"unshare -m / mount is not permitted here ({p.stderr.decode().strip()[:80]})"
    if not os.access(CGROUP2, os.W_OK) or not (CGROUP2 / "cgroup.procs").exists():
        return "no writable cgroup2 hierarchy to put the service in"
    return None


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    why = why_not()
    if why:
        pytest.skip(why)
    t = tmp_path_factory.mktemp("live")
    (t / "journald.conf").write_text(JOURNALD_CONF)
    (t / "service.py").write_text(SERVICE)
    (t / "seed.log").write_text(SEED.read_text())
    unit = f"ld-live-{uuid.uuid4().hex[:8]}.service"
    cg = CGROUP2 / "system.slice" / unit
    made_slice = not (CGROUP2 / "system.slice").exists()
    cg.mkdir(parents=True)
    try:
        p = subprocess.run(
            ["unshare", "-m", "bash", "-c", SCRIPT, "_", str(t), sys.executable, unit, str(cg)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
    finally:
        for d in (cg, CGROUP2 / "system.slice") if made_slice else (cg,):
            try:
                d.rmdir()
            except OSError:
                pass
    assert p.returncode == 0, p.stderr
    return t, unit


def test_explain_reads_the_live_journal(live):
    t, unit = live
    assert int((t / "sent1").read_text()) > 50
    assert (t / "explain.rc").read_text().strip() == "1", (t / "explain.err").read_text()
    doc = json.loads((t / "explain.json").read_text())
    assert doc["cause"] == "kv_cache_oom" and doc["fixes"][0]["flag"] == "--mem-fraction-static"
    assert doc["window"]["lines"] == int((t / "sent1").read_text())  # every line the unit logged, no other


def test_notify_writes_the_verdict_through_journal_send(live):
    t, unit = live
    assert (t / "notify.rc").read_text().strip() == "0", (t / "notify.err").read_text()
    entries = [json.loads(line) for line in (t / "notify.json").read_text().splitlines() if line.strip()]
    [e] = entries
    assert e["LOGDOCTOR_CAUSE"] == "kv_cache_oom" and e["_TRANSPORT"] == "journal"
    assert re.search(r"kv_cache_oom", e["MESSAGE"]) and unit in json.dumps(e)


def test_watch_follows_the_system_journal_through_a_rotation(live):
    t, unit = live
    assert (t / "watch.rc").read_text().strip() == "1", (t / "watch.err").read_text()
    doc = json.loads((t / "watch.json").read_text())
    assert doc["cause"] == "kv_cache_oom" and doc["watch"]["outcome"] == "failed"
    assert doc["watch"]["entries"] >= int((t / "sent2").read_text())
    files = (t / "files").read_text().split()
    assert len([f for f in files if f.startswith("system@")]) >= 2  # rotated twice: the followed file archived
