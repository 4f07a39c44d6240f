"""One segment (or one journal's entries) → rows, one per attempt, through the same pipeline as `explain`.

The rows come from `logdoctor.verdict.api.diagnose_timeline` per attempt (each attempt diagnosed as the most recent one of
the window up to it, so the fix planner still sees what earlier attempts tried); nothing here re-decides a cause.
A journal (or a text journal of several services) is split by unit first (timeline.units: the engine units'
parts), then by attempt.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from datetime import datetime, timedelta
from functools import lru_cache

from logdoctor.core.records import SERVICE, ReadResult, Record, Stats, kernel_sourced
from logdoctor.core.vocab import XID_APP
from logdoctor.timeline import units
from logdoctor.timeline.attempts import outcome as attempt_outcome
from logdoctor.verdict import signature as failure
from logdoctor.verdict.signature import signature

COLUMNS = (
    "source",
    "member",
    "host",
    "unit",
    "engine",
    "engine_version",
    "attempt",
    "start_time",
    "year_source",
    "phase",
    "outcome",
    "status",
    "cause",
    "confidence",
    "rule",
    "rank",
    "first_fix",
    "signature",
    "error_template",
    "frames",
    "evidence_line",
    "evidence",
    "config_id",
    "hardware_evidence",
    "lines",
    "reason",
)
_YEARLESS = ("journal-short", "journal-short-precise", "journal-with-unit")
_HW = re.compile(
    r"NVRM: Xid|fallen off the bus|\bECC\b|[Uu]ncorrectable|[Rr]ow remap|GPU is lost|GSP .*(?:timeout|error)"
)
_XID_CODE = re.compile(r"NVRM: Xid \([^)]*\): (\d+)")


@lru_cache(maxsize=1)
def _pipeline():
    """Rules and the classifier, loaded once per process (worker)."""
    from logdoctor.classify.runtime import load_default
    from logdoctor.matching.loader import load_rules

    return load_rules(()), load_default()


def analyse_lines(
    lines: list[tuple[int, str]], meta: dict, min_start: int = 0, healthy_only: bool = False
) -> list[dict] | None:
    """(input line number, text) pairs of one segment → rows. `meta`: source, member, year, year_source, mtime.
    Attempts that start before input line `min_start` (earlier attempts given as context) get no row.
    `healthy_only`: return None, before any diagnosis, as soon as an attempt of these lines fails (the caller
    reads that segment again in full)."""
    from logdoctor.input.read import read_lines

    if not lines:
        return []
    numbers = [n for n, _ in lines]
    res = read_lines([t for _, t in lines], meta["source"], year=meta.get("year"))
    for r in res.records:  # back to the input's own line numbers (the segment may be a reduced selection)
        r.line = numbers[r.line - 1]
        if r.end_line:
            r.end_line = numbers[min(r.end_line, len(numbers)) - 1]
    _fix_years(res.records, meta)
    return analyse_records(res.records, res.stats.read, meta, min_start, healthy_only)


def analyse_entries(entries, meta: dict) -> list[dict]:
    from logdoctor.input.read import read_entries

    res = read_entries(entries, meta["source"])
    return analyse_records(res.records, res.stats.read, meta) or []


def analyse_records(
    records: list[Record], nread: int, meta: dict, min_start: int = 0, healthy_only: bool = False
) -> list[dict] | None:
    from logdoctor.timeline.build import Timeline, build
    from logdoctor.verdict.api import diagnose_timeline

    rules, classifier = _pipeline()
    rows = []
    for part in units.engine_parts(records):  # one part per engine unit of a journal of several services
        recs = part.records
        tl = build(recs, _own_engine(recs, min_start))
        if (
            tl.engine == "unknown"
            and not any(r.transport == SERVICE and r.msg.strip() for r in recs)
            and not any(a.failed for a in tl.attempts)
        ):
            continue  # a README or a label file; a kernel log whose Xid killed the engine is kept (a row to flag)
        if healthy_only and any(a.records and a.failed and a.start_line >= min_start for a in tl.attempts):
            return None
        res = ReadResult(records=recs, stats=Stats(read=nread), origin=meta["source"])
        for i, a in enumerate(tl.attempts):
            if not a.records or (tl.engine == "unknown" and not a.failed) or a.start_line < min_start:
                continue  # a README, a label file, a quiet foreign log; or a context attempt (no row of its own)
            sub = Timeline(
                engine=tl.engine,
                engine_version=tl.engine_version,
                attempts=tl.attempts[: i + 1],
                records=recs,
                start_seen=tl.start_seen,
                unit=tl.unit,
            )
            d = diagnose_timeline(sub, res, rules, classifier=classifier)
            rows.append(_row(d, a, i, part.unit or tl.unit, meta) | {"_part": part.unit})
    return rows


def _own_engine(recs: list[Record], min_start: int) -> str:
    """With context attempts in front (min_start > 0), the segment's own lines decide the engine: a host that ran
    vLLM before SGLang must not have its SGLang crash read as vLLM because the context outvoted it."""
    if not min_start:
        return "auto"
    from logdoctor.engines.detect import detect

    own, _ = detect([r for r in recs if r.line >= min_start])
    return own if own != "unknown" else "auto"


def _fix_years(records: list[Record], meta: dict) -> None:
    """Short journal lines carry no year: `year` was assumed; a line dated after the file was written belongs to
    the year before (a log of December read from a file of January)."""
    mtime = meta.get("mtime")
    if meta.get("year_source") != "file metadata" or not mtime:
        return
    limit = datetime.fromtimestamp(mtime) + timedelta(days=2)
    for r in records:
        if r.ts is not None and r.fmt in _YEARLESS and r.ts.tzinfo is None and r.ts > limit:
            try:
                r.ts = r.ts.replace(year=r.ts.year - 1)
            except ValueError:
                pass


def _row(d, a, index: int, unit: str | None, meta: dict) -> dict:
    # (a dmesg paste read as monotonic short output has "NVRM:" where the host would be)
    host = Counter(r.host for r in a.records if r.host and not r.host.endswith(":")).most_common(1)
    ts = next((r.ts for r in a.records if r.ts is not None), None)
    yearless = any(r.fmt in _YEARLESS for r in a.records[:50])
    outcome = attempt_outcome(a)  # the one explain's attempts[].outcome uses: a ready service then stopped is stopped
    template, frames = _error_template(d, a) if a.failed else ("", [])
    ev = d.evidence[0] if d.evidence else None
    hw = _hardware_evidence(a)
    return {
        "source": meta["source"],
        "member": meta.get("member"),
        "host": host[0][0] if host else meta.get("host"),
        "unit": _row_unit(a, unit),
        "engine": d.engine,
        "engine_version": d.engine_version,
        "attempt": index + 1,
        "start_time": _naive_local(ts),
        "year_source": (meta.get("year_source") if yearless else "log") if ts is not None else None,
        "phase": d.phase,
        "outcome": outcome,
        "status": "diagnosed" if a.failed else "healthy",
        "cause": d.cause if a.failed else None,
        "confidence": round(float(d.confidence), 3),
        "rule": d.rule,
        "rank": d.rank,
        "first_fix": _first_fix(d),
        "signature": signature(d.cause, d.rule, template, frames) if a.failed else None,
        "error_template": template or None,
        "frames": " > ".join(frames) or None,
        "evidence_line": ev.line if ev else None,
        "evidence": ev.text if ev else None,
        "config_id": _config_id(d, a),
        "hardware_evidence": "\n".join(dict.fromkeys(hw))[:1000] or None,
        "lines": a.end_line - a.start_line + 1 if a.records else 0,
        "reason": None,
        "_start": a.start_line,
    }


def _row_unit(a, unit: str | None) -> str | None:
    """The unit a row names: the one the journal was split by or the timeline's (a journal field, else the unit
    systemd's own lines name: "Started X.service", "X.service: Main process exited"), else the attempt's own
    service unit or, lacking any, its service identifier (a plain file carries no unit field)."""
    return (
        unit
        or next((r.unit for r in a.records if r.transport == SERVICE and r.unit), None)
        or next((r.ident for r in a.records if r.transport == SERVICE and r.ident), None)
    )


def _naive_local(ts: datetime | None) -> datetime | None:
    """A start time as naive local time: table, CSV and parquet columns cannot mix aware and naive values."""
    if ts is None:
        return None
    return ts.replace(tzinfo=None) if ts.tzinfo is None else ts.astimezone().replace(tzinfo=None)


def _error_template(d, a) -> tuple[str, list]:
    """The masked error line and engine frames a failure's signature is built from (verdict.signature), so that the
    same fault on other hosts clusters."""
    return failure.template(a, d.evidence[0].text if d.evidence else None)


def _first_fix(d) -> str:
    """The first fix in one cell: its own text, else `flag value` (a bare switch shows only its flag), else the
    first action when the diagnosis has no flag to turn."""
    if d.fixes:
        f = d.fixes[0]
        return f.text or (f"{f.flag} {f.to}" if f.to not in (True, None) else f.flag)
    return d.actions[0] if d.actions else ""


def _hardware_evidence(a) -> list[str]:
    """Hardware evidence: the kernel's own lines only (records.kernel_sourced, as explain reads them), and never an
    application-class Xid (13, 31, 43, 45, ...: NVIDIA's catalogue calls them the program's fault, and explain
    says illegal_memory_access for them), whose line is left out even when it came from the kernel."""
    app_xid = {e.line for e in a.kernel if e.name == "xid" and e.values.get("xid") in XID_APP}
    return [
        r.msg.strip()[:200]
        for r in a.records
        if kernel_sourced(r) and r.line not in app_xid and _HW.search(r.msg) and not _app_xid(r.msg)
    ] + [e.text[:200] for e in a.kernel if e.name in ("xid", "fallen_off") and e.text and e.line not in app_xid]


def _config_id(d, a) -> str | None:
    """A short stable id of the engine, model and set options, so a fleet's rows group by configuration; None
    when the command line was not seen."""
    if not a.config.known:
        return None
    cfg = {k: v for k, v in sorted(d.config.items()) if v is not None}
    model = a.config.raw.get("model_path") or a.config.raw.get("model")
    key = json.dumps([d.engine, str(model), cfg], sort_keys=True, default=str)
    return "cfg-" + hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:8]


def _fatal(b) -> bool:
    from logdoctor.timeline.build import is_fatal_block

    return is_fatal_block(b)


def _app_xid(msg: str) -> bool:
    m = _XID_CODE.search(msg)
    return m is not None and int(m.group(1)) in XID_APP
