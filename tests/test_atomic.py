"""Atomic writes (logdoctor/core/atomic.py): an interrupted or failed write leaves the old file whole, never half a file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.core.atomic import WriteError, write_text

ROOT = Path(__file__).resolve().parent.parent


def test_replaces_and_keeps_mode(tmp_path):
    f = tmp_path / "unit.service"
    f.write_text("old\n")
    f.chmod(0o640)
    write_text(f, "new\n")
    assert f.read_text() == "new\n" and (f.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["unit.service"]  # no temporary left behind


def test_missing_folder_is_one_line_error(tmp_path):
    with pytest.raises(WriteError) as ei:
        write_text(tmp_path / "no" / "such" / "x.txt", "x")
    assert "\n" not in str(ei.value) and "No such file or directory" in str(ei.value)


def _full_disk_child(path: str, size: int) -> int:
    """In a child: RLIMIT_FSIZE stands in for a full disk (writes past it fail with EFBIG)."""
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from logdoctor.core.atomic import write_bytes, WriteError\n"
        "try:\n    write_bytes(sys.argv[1], b'n' * int(sys.argv[2]))\n"
        "except WriteError as e:\n    print(e)\n    sys.exit(2)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, path, str(size)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stdout


def test_full_disk_leaves_old_file(tmp_path):
    f = tmp_path / "report.html"
    f.write_bytes(b"old report\n")
    rc, out = _full_disk_child(str(f), 1 << 20)
    assert rc == 2 and out.startswith(f"cannot write {f}:") and "(the file is unchanged)" in out, out
    assert f.read_bytes() == b"old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    rc, out = _full_disk_child(str(f), 100)  # under the limit: written
    assert rc == 0 and f.read_bytes() == b"n" * 100


def test_sigkill_mid_write_leaves_old_or_new(tmp_path):
    """A writer killed after writing the data, before the rename: the target is the old content, whole (only a
    stray temporary file remains, which nothing reads)."""
    f = tmp_path / "cache.json"
    f.write_bytes(b"{}")
    code = (
        "import sys\nfrom logdoctor.core.atomic import write_bytes\n"
        "import os\nr, w = int(sys.argv[2]), int(sys.argv[3])\n"
        "import logdoctor.core.atomic as a\n"
        "def hang(fd):\n    os.write(w, b'x'); os.read(r, 1)\n"  # signal the parent, then wait to be killed
        "a.os.fsync = hang\nwrite_bytes(sys.argv[1], b'y' * (8 << 20))\n"
    )
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(f), str(r2), str(w1)],
        pass_fds=(r2, w1),
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert os.read(r1, 1) == b"x"  # the data is written to the temporary file, not yet renamed
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    for fd in (r1, w1, r2, w2):
        os.close(fd)
    assert f.read_bytes() == b"{}"
    leftovers = [x.name for x in tmp_path.iterdir() if x.name != "cache.json"]
    assert all(x.startswith(".cache.json.") and x.endswith(".tmp") for x in leftovers), leftovers


def test_rules_docs_out_is_atomic(tmp_path):
    out = tmp_path / "catalogue.md"
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "rules", "docs", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert out.read_text().startswith("# Rule catalogue")
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "rules", "docs", "--out", str(tmp_path / "no" / "x.md")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "cannot write" in p.stderr, p.stderr
