"""The HTML report in a real headless browser (Debian's chromium): plots and tables are in the rendered DOM, our
own (nonce) script runs, a <script> that came from a log does not, and a screenshot is saved to look at.

The screenshot goes to $LOGDOCTOR_ARTIFACTS (default: <tmp>/logdoctor-artifacts)/triage-report.png."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "journals"
PWN = "<script>document.body.setAttribute('data-pwned','1')</script>"
CASES = (
    "seed-all-attempts",
    "sglang-graph_capture_fault-unsafe-gdn-h100",
    "sglang-hardware_fault-xid94-serving",
    "vllm-healthy-llama8b",
    "sglang-kv_cache_oom-llama70b-a100-classic",
    "vllm-hardware_fault-attempts",
    "sglang-port_in_use-http-attempts",
    "sglang-healthy-llama8b-classic",
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    for i, case in enumerate(CASES):
        text = (FIX / case / "journal.log").read_text()
        if i == 1:  # the decisive error line carries a script, and so does a host-looking field
            text = text.replace(
                "operation not permitted when stream is capturing",
                f"operation not permitted when stream is capturing {PWN}",
            )
        d = root / f"h{i}"
        d.mkdir()
        (d / "engine.log").write_text(text)
    (root / "broken.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    out = root / "report.html"
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "triage", str(root), "--format", "html", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 2, p.stderr  # broken.gz is unreadable
    return out


def test_report_is_self_contained_and_escaped(report):
    html = report.read_text()
    # nothing fetched from anywhere: no external src/href/url(), no <link>, no CDN
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?https?:|<link\b|@import""", html, re.I)
    assert PWN not in html and "&lt;script&gt;document.body.setAttribute" in html
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    nonce = re.search(r"script-src 'nonce-([^']+)'", csp).group(1)
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts == [f'<script nonce="{nonce}">']  # one script: ours
    assert html.count("<svg") >= 4


def test_report_in_headless_chromium(report, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip(
            "Debian's chromium is not installed (scripts/setup-and-test.sh installs it with apt; "
            "this machine could not)"
        )
    url = report.as_uri()
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert dom.returncode == 0, dom.stderr[-2000:]
    d = dom.stdout
    body = re.search(r"<body[^>]*>", d).group(0)
    assert 'data-sorter="ready"' in body  # our nonce'd script ran
    assert "data-pwned" not in body  # the log's script did not
    for pid in ("plot-time", "plot-host", "plot-version", "plot-heatmap"):
        assert re.search(rf'<figure class="plot" id="{pid}"><svg', d), pid
    for tid in ("suspects", "signatures", "attempts", "inputs"):
        assert f'id="{tid}"' in d, tid
    assert "&lt;script&gt;document.body.setAttribute" in d
    assert "broken.gz" in d and "gzip data is truncated" in d  # explain's words for it (one input policy)
    # issue 23: an issue list first — signatures, then suspect hosts, plots after; rows link to their attempts
    assert d.index('id="signatures"') < d.index('id="suspects"') < d.index('id="plot-time"')
    links = re.findall(r'<td class="sig"><a href="#(sig-[^"]+)">', d)
    assert links and all(f'<details id="{x}">' in d for x in links)
    assert "(no host)" not in d and not re.search(r"\.log:\d+\.0\b", d)
    assert "first fix or action" in d
    # the first screen (1400 x 900) holds the signature table; the plots start below it
    with tempfile.TemporaryDirectory() as profile:
        first = subprocess.run(
            [
                exe,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--window-size=1400,900",
                "--virtual-time-budget=3000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    top = {k: int(v) for k, v in re.findall(r'data-top-([\w-]+)="(-?\d+)"', re.search(r"<body[^>]*>", first).group(0))}
    assert 0 < top["signatures"] < 300 and top["plot-time"] > top["signatures"] + 200, top
    art = Path(os.environ.get("LOGDOCTOR_ARTIFACTS", Path(tempfile.gettempdir()) / "logdoctor-artifacts"))
    art.mkdir(parents=True, exist_ok=True)
    shot = art / "triage-report.png"
    shot.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        s = subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", "--window-size=1400,900", f"--screenshot={shot}", url],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert s.returncode == 0 and shot.exists() and shot.stat().st_size > 20000, s.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
