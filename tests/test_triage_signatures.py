"""Signature granularity and the prefilter, checked on every fixture.

- not split: one crash with other PIDs, ranks, device numbers, paths, sizes, addresses and ports keeps its signature;
- not merged: two fixtures that share a signature have the same labelled cause and the same exception type;
- the prefilter never hides a failure: every segment that a full parse finds failed carried a prefilter signal;
- the reduced parse of a big healthy attempt (head + hits + tail) gives the row a full parse gives.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

pytest.importorskip("pandas")

import logdoctor  # noqa: E402
from logdoctor.scan import scan as scan_mod
from logdoctor.scan.prefilter import Prefilter  # noqa: E402
from logdoctor.triage import analyse  # noqa: E402
from logdoctor.verdict.signature import mask  # noqa: E402

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "journals"
CASES = sorted(p.parent.name for p in FIX.glob("*/journal.log"))


def _rows(text: str, source: str = "x.log") -> list[dict]:
    pf = Prefilter()
    rows = []
    for seg in scan_mod.scan(io.BytesIO(text.encode()), pf):
        lines = [(n, b.decode("utf-8", "replace")) for n, b in seg.lines(full=seg.signal)]
        rows += analyse.analyse_lines(lines, {"source": source, "year": 2026, "year_source": "--year"})
    return rows  # (per-segment, without the runner's cross-attempt context: enough for signatures)


def _perturb(text: str) -> str:
    """Change what differs between two occurrences of one crash, not what it is."""
    t = re.sub(r"\[(\d{3,7})\]", lambda m: f"[{int(m[1]) + 4242}]", text)  # journal PIDs
    t = re.sub(r"\bpid[= ](\d+)", lambda m: f"pid={int(m[1]) + 17}", t)
    t = re.sub(r"/models/", "/mnt/nfs/weights/", t)  # paths
    t = re.sub(r"/usr/local/lib/python3\.\d+/", "/opt/venv/lib/python3.12/", t)
    t = re.sub(
        r"Tried to allocate (\d+(?:\.\d+)?) ([GM]iB)", lambda m: f"Tried to allocate {float(m[1]) * 1.5:.2f} {m[2]}", t
    )
    t = re.sub(r"0x[0-9a-f]{6,}", lambda m: hex(int(m[0], 16) ^ 0x5A5A50), t)  # addresses
    t = re.sub(r"\bcuda:(\d)\b", lambda m: f"cuda:{(int(m[1]) + 1) % 8}", t)
    return t


@pytest.fixture(scope="module")
def fixture_rows():
    out = {}
    for case in CASES:
        out[case] = _rows((FIX / case / "journal.log").read_text(errors="replace"), case)
    return out


def test_one_crash_is_not_split(fixture_rows):
    checked = 0
    for case in CASES:
        base = [r for r in fixture_rows[case] if r["outcome"] == "failed"]
        if not base:
            continue
        text = (FIX / case / "journal.log").read_text(errors="replace")
        pert = [r for r in _rows(_perturb(text), case) if r["outcome"] == "failed"]
        assert len(pert) == len(base), case
        for a, b in zip(base, pert):
            if (a["cause"], a["rule"]) != (b["cause"], b["rule"]):
                continue  # the diagnosis itself moved (a size crossed a rule's threshold): not a signature matter
            assert a["signature"] == b["signature"], (case, a["error_template"], b["error_template"])
            checked += 1
    assert checked >= 100


def test_unrelated_crashes_are_not_merged(fixture_rows):
    labels = {
        c: yaml.safe_load((FIX / c / "label.yaml").read_text()) for c in CASES if (FIX / c / "label.yaml").exists()
    }
    by_sig: dict[str, set] = defaultdict(set)
    templates: dict[str, set] = defaultdict(set)
    for case, rows in fixture_rows.items():
        failed = [r for r in rows if r["outcome"] == "failed"]
        if failed:
            last = failed[-1]
            by_sig[last["signature"]].add(case)
            templates[last["signature"]].add((last["error_template"] or "").split(":")[0])
    shared = {s: cs for s, cs in by_sig.items() if len(cs) > 1}
    for sig, cs in shared.items():
        # (a case whose last attempt came up is labelled with no cause; its failed attempt still counts)
        causes = {labels[c].get("cause") for c in cs if c in labels and labels[c].get("failed", True)}
        assert len(causes) <= 1, (sig, cs, causes)
        assert len(templates[sig]) == 1, (sig, templates[sig])
    # and the grouping is not trivially one-per-case either: some fixtures of one story share a signature
    assert shared, "no two fixtures share a signature: the masking is too fine"


def test_mask_removes_variable_parts():
    a = mask(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity "
        "of 79.19 GiB of which 1.06 GiB is free. Process 123456 has 78.12 GiB memory in use."
    )
    b = mask(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 7 has a total capacity "
        "of 139.81 GiB of which 200.06 MiB is free. Process 99 has 139.1 GiB memory in use."
    )
    assert a == b
    assert mask("OSError: [Errno 98] Address already in use: ('0.0.0.0', 30000)") == mask(
        "OSError: [Errno 98] Address already in use: ('10.1.2.3', 8000)"
    )
    assert mask("FileNotFoundError: /models/a/config.json") == mask("FileNotFoundError: /data/b/c/config.json")
    assert mask("RuntimeError: NCCL error: unhandled system error") != mask(
        "RuntimeError: NCCL error: remote process exited"
    )


def test_prefilter_never_hides_a_failure():
    for case in CASES:
        text = (FIX / case / "journal.log").read_text(errors="replace")
        for seg in scan_mod.scan(io.BytesIO(text.encode()), Prefilter()):
            lines = [(n, b.decode("utf-8", "replace")) for n, b in seg.lines(full=True)]
            rows = analyse.analyse_lines(lines, {"source": case, "year": 2026, "year_source": "--year"})
            if any(r["outcome"] == "failed" for r in rows):
                assert seg.signal, case


def _noise(n: int) -> str:
    out = []
    for i in range(n):
        out.append(
            f"May 22 11:{i // 60 % 60:02d}:{i % 60:02d} h200-qwen-03 python3[115949]: [2026-05-22 11:00:00 TP0] "
            f"Decode batch. #running-req: {i % 50}, #token: {i * 7 % 90000}, token usage: 0.{i % 99:02d}, "
            f"cuda graph: True, gen throughput (token/s): {i % 3000}.5, #queue-req: 0"
        )
    return "\n".join(out) + "\n"


def test_reduced_parse_of_a_big_attempt_matches_the_full_one(monkeypatch):
    monkeypatch.setattr(scan_mod, "SMALL_SEGMENT", 200_000)  # force the head + hits + tail path
    healthy = (FIX / "sglang-healthy-llama8b-classic" / "journal.log").read_text()
    failing = (FIX / "sglang-hardware_fault-xid94-serving" / "journal.log").read_text()
    for text, cut in ((healthy, None), (failing, "NVRM")):
        lines = text.splitlines(keepends=True)
        at = next((i for i, l in enumerate(lines) if cut and cut in l), len(lines) // 2) if cut else len(lines)
        big = "".join(lines[:at]) + _noise(6000) + "".join(lines[at:])
        assert len(big) > 3 * 200_000
        rows = _rows(big)
        d = logdoctor.diagnose(big)
        assert len(rows) == len(d.attempts)
        last = rows[-1]
        assert (last["outcome"] == "failed") == d.failed
        assert last["phase"] == d.phase and last["engine"] == d.engine and last["engine_version"] == d.engine_version
        if d.failed:
            assert last["cause"] == d.cause and last["rule"] == d.rule
            # evidence line numbers are the input's own
            assert big.splitlines()[last["evidence_line"] - 1].find(last["evidence"][:40]) >= 0


@pytest.mark.parametrize("engine", ["re2", "re"])
def test_scanner_cuts_attempts_and_flags_signals(engine):
    if engine == "re2":
        pytest.importorskip("re2")
    text = (FIX / "seed-all-attempts" / "journal.log").read_bytes()
    segs = list(scan_mod.scan(io.BytesIO(text), Prefilter(engine)))
    assert len(segs) == len(logdoctor.diagnose(text.decode()).attempts) == 3
    assert all(s.signal for s in segs)  # every attempt of that story failed
    assert [s.first_line for s in segs] == sorted(s.first_line for s in segs)
    assert sum(s.nlines for s in segs) == text.count(b"\n")
    noise = _noise(3000).encode()
    segs = list(scan_mod.scan(io.BytesIO(noise), Prefilter(engine)))
    assert len(segs) == 1 and not segs[0].signal and not segs[0].hits
