"""State under faults (docs/reliability.md): the history database survives a writer killed with SIGKILL in the
middle of a transaction (at most that attempt is lost, the file is never corrupted), and a full disk gives a clear
warning, the verdict, and no corruption. Real SQLite, real processes, a real full filesystem where one can be mounted.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from checks import history_attempts

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log"
OTHER = ROOT / "fixtures" / "journals" / "seed-attempt2-capture-unsafe" / "journal.log"


def _env(**kw) -> dict:
    return dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT), **kw)


# A writer that records batches of BATCH rows forever; with STOP_INSIDE set it announces (one byte on fd W) that it
# is inside the transaction, half-way through a batch, and waits there to be killed.
_WRITER = """
import os, sys
from logdoctor.history import AttemptRow, History
db, batch, w, stop_inside = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
h = History(db)
n = 0
real = h.db.execute
def execute(sql, *a):
    out = real(sql, *a)
    if stop_inside and sql.startswith("INSERT") and execute.count == batch // 2:
        os.write(w, b"x")
        os.read(0, 1)                       # blocks until the parent kills us
    execute.count += 1
    return out
execute.count = 0
h.db = type("Con", (), {"execute": staticmethod(execute), "close": h.db.close,
                        "in_transaction": property(lambda s: True)})()
if not stop_inside:
    os.write(w, b"x")
while True:
    execute.count = 0
    h.record([AttemptRow(key=f"k{n}-{i}", host="h", unit="u.service", outcome="failed", cause="kv_cache_oom",
                         config={"mem_fraction": 0.9, "pad": "x" * 2000}) for i in range(batch)])
    n += 1
"""


def _writer(db: Path, batch: int, stop_inside: bool) -> tuple[subprocess.Popen, int]:
    r, w = os.pipe()
    p = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db), str(batch), str(w), "1" if stop_inside else "0"],
        pass_fds=(w,),
        stdin=subprocess.PIPE,
        env=_env(),
        cwd=ROOT,
    )
    os.close(w)
    assert os.read(r, 1) == b"x", "writer did not start"
    return p, r


def test_sigkill_inside_a_transaction_loses_only_that_attempt(tmp_path):
    db = tmp_path / "history.db"
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--history", str(db), str(SEED)],
        capture_output=True,
        env=_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    before = history_attempts(db)
    assert before >= 1
    p, r = _writer(db, batch=40, stop_inside=True)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    os.close(r)
    assert history_attempts(db) == before  # the half-written batch is gone, nothing else
    # the database is usable at once: the next explain reads and records
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--history", str(db), str(OTHER)],
        capture_output=True,
        env=_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 1 and b"warning" not in p.stderr, p.stderr
    assert history_attempts(db) > before


def test_sigkill_at_random_moments_never_corrupts(tmp_path):
    """Kill a busy writer at random moments (inside statements, commits, WAL writes, checkpoints): every time the
    file passes integrity_check and holds only whole batches."""
    db = tmp_path / "history.db"
    rnd = random.Random(14)
    batch = 25
    last = 0
    for _ in range(6):
        p, r = _writer(db, batch=batch, stop_inside=False)
        try:
            p.wait(timeout=rnd.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            pass
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        os.close(r)
        n = history_attempts(db)
        assert n % batch == 0 and n >= last, n  # whole transactions only, none lost once committed
        last = n
    assert last > 0


def _full_fs_script(mnt: Path, db: Path, log: Path, free_kib: int) -> str:
    return (
        f"set -e\nmount -t tmpfs -o size=512k tmpfs {mnt}\ncp {db} {mnt}/history.db\n"
        f"dd if=/dev/zero of={mnt}/filler bs=1k count=$(( $(df -k --output=avail {mnt} | tail -1) - {free_kib} ))"
        f" status=none\n"
        f"set +e\n{sys.executable} -m logdoctor explain --history {mnt}/history.db {log}\nrc=$?\n"
        f"cp {mnt}/history.db {db}.after\nexit $rc\n"
    )


@pytest.mark.parametrize("free_kib", [8, 40], ids=["full-at-open", "full-at-write"])
def test_full_disk_keeps_the_verdict_and_the_database(tmp_path, free_kib):
    """A real full filesystem (a 512 KiB tmpfs, filled) in a private mount namespace: 8 KiB left fails when SQLite
    maps its shared-memory file, 40 KiB when the transaction is written. Where mounting is not permitted,
    RLIMIT_FSIZE stands in (the write fails with EFBIG instead of ENOSPC)."""
    db = tmp_path / "history.db"
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--history", str(db), str(SEED)],
        capture_output=True,
        env=_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    before = history_attempts(db)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    unshare = shutil.which("unshare")
    probe = (
        subprocess.run([unshare, "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {mnt}"], capture_output=True)
        if unshare and os.geteuid() == 0
        else None
    )
    if probe is not None and probe.returncode == 0:
        p = subprocess.run(
            [unshare, "-m", "sh", "-c", _full_fs_script(mnt, db, OTHER, free_kib=free_kib)],
            capture_output=True,
            env=_env(),
            cwd=ROOT,
            timeout=120,
        )
        after = Path(f"{db}.after")
    else:
        import resource

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            size = db.stat().st_size
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

        p = subprocess.run(
            [sys.executable, "-m", "logdoctor", "explain", "--history", str(db), str(OTHER)],
            capture_output=True,
            env=_env(),
            cwd=ROOT,
            timeout=120,
            preexec_fn=limit,
        )
        after = db
    err = p.stderr.decode()
    assert p.returncode == 1, err  # the verdict, as without a history
    assert p.stdout.decode().startswith("FAILED  during CUDA-graph capture"), p.stdout[:200]
    lines = err.splitlines()
    assert (
        len(lines) == 1
        and lines[0].startswith("logdoctor: warning: the history database ")
        and ("not recorded" in lines[0] or "cannot be opened for writing" in lines[0])
    ), err
    assert "Traceback" not in err
    assert history_attempts(after) == before  # unchanged and whole


# ------------------------------------------------------------------------------------------------- the rule cache


def _cached_rules(cache_dir: Path, rules_dir: Path):
    """Load `rules_dir` through the cache (as explain does), in a subprocess with its own cache folder."""
    code = (
        "import sys\nfrom logdoctor.matching.loader import load_rules\n"
        "print('\\n'.join(f'{r.id}|{r.title}|{r.tier}' for r in sorted(load_rules((sys.argv[1],)),"
        " key=lambda r: r.id)))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(rules_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(LOGDOCTOR_CACHE_DIR=str(cache_dir)),
        timeout=120,
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p.stdout


def _user_rules(tmp_path: Path) -> Path:
    from logdoctor.matching.loader import bundled_rules_dir

    user = tmp_path / "user-rules"
    shutil.copytree(bundled_rules_dir() / "port_in_use", user / "port_in_use")
    return user


def _entry_for(cache_dir: Path, user: Path) -> Path:
    from logdoctor.matching import cache

    return cache_dir / f"rules-{cache.content_key(user, cache.rule_files(user))}.json"


def test_rule_cache_stale_damaged_or_foreign_is_rebuilt(tmp_path):
    """A stale entry (a rule edited), a damaged one (cut, garbage, a class name outside the allow-list, a pickle
    payload) and one another user could have written (mode 0666) are never used: the rules are parsed again and
    come out the same as without any cache."""
    cache_dir = tmp_path / "cache"
    user = _user_rules(tmp_path)
    want = _cached_rules(tmp_path / "fresh", user)
    assert _cached_rules(cache_dir, user) == want  # builds the entry
    entry = _entry_for(cache_dir, user)
    good = entry.read_bytes()
    assert good.startswith(b"{") and (entry.stat().st_mode & 0o777) == 0o600
    bad_entries = {
        "cut": good[: len(good) // 2],
        "garbage": b"\x80\x04garbage",
        "foreign class": good.replace(b'"__dc__":"Fix"', b'"__dc__":"Popen"', 1),
        "pickle": b"\x80\x04\x95" + os.urandom(64),
        "edited title": good.replace(b"port", b"PWNED"),  # well-formed but not what the files say: mode 0666
    }
    for what, data in bad_entries.items():
        entry.write_bytes(data)
        if what == "edited title":
            entry.chmod(0o666)
        assert _cached_rules(cache_dir, user) == want, what
        assert json.loads(entry.read_bytes()) == json.loads(good), what  # rewritten whole (atomic), mode 0600
        assert (entry.stat().st_mode & 0o777) == 0o600
    # stale: a rule edited gets a new key, and the old entry is not read for it
    path = sorted(user.rglob("*.yaml"))[0]
    path.write_text(path.read_text().replace("title:", "title: edited —", 1))
    assert "edited —" in _cached_rules(cache_dir, user)
    assert _entry_for(cache_dir, user).exists() and _entry_for(cache_dir, user) != entry


def test_model_copy_is_data_and_only_our_own(tmp_path, monkeypatch):
    """The classifier's binary copy: a tampered table (wrong shape), trailing bytes, or a well-formed copy with
    other weights that another user could have written (mode 0666) is never used."""
    from logdoctor.classify.runtime import DEFAULT_PATH
    from logdoctor.matching import cache

    monkeypatch.setenv("LOGDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    want = json.loads(DEFAULT_PATH.read_text())
    assert cache.cached_json(DEFAULT_PATH) == want
    (copy,) = (tmp_path / "cache").glob("json-*.bin")
    good = copy.read_bytes()
    other = dict(want, temperature=99.0)
    for data, mode in ((good[:-8], 0o600), (good + b"x", 0o600), (cache._pack(other), 0o666)):
        copy.write_bytes(data)
        copy.chmod(mode)
        assert cache.cached_json(DEFAULT_PATH) == want
    copy.write_bytes(cache._pack(other))
    copy.chmod(0o600)
    assert cache.cached_json(DEFAULT_PATH)["temperature"] == 99.0  # (ours and well-formed: used, as designed)
