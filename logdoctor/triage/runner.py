"""Run triage over input specs: one task per spec, locally (a process pool over --jobs cores) or on a Dask cluster.

`process_spec` is the whole task: it opens the spec, streams each log through the prefilter scanner, diagnoses
what needs it, and returns plain rows (dicts) plus one accounting entry per log it met. It never raises for a bad
input: the reason goes into the accounting. Results are put back in spec order, so the DataFrame is the same
whatever ran the tasks.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime

from logdoctor.core import limits
from logdoctor.input.sources.archive import Budget
from logdoctor.scan.prefilter import shared as prefilter
from logdoctor.scan.scan import ScanStats, repaired_stream, scan
from logdoctor.triage.analyse import analyse_entries, analyse_lines
from logdoctor.triage.inputs import NOT_LOG_SUFFIXES, InputSpec, LogStream, Skipped, Unreadable, open_logs

CONTEXT_ATTEMPTS = 3
DIRECT_SEGMENT = 256 << 10  # a segment with a failure cue up to this size is analysed in full at once
NO_SERVICE = "no lines of an inference service in it"


@dataclass
class TaskResult:
    index: int
    rows: list[dict] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)  # source, member, status, reason, attempts, bytes, lines
    bytes: int = 0
    lines: int = 0
    seconds: float = 0.0
    expanded: int = 0  # decompressed bytes (every layer), counted against the run's cap


class _RunCap:
    """The run's cap on decompressed bytes (limits.RUN_EXPANDED_CAP), summed over finished tasks: once reached,
    the inputs not yet started are listed as not read instead of read."""

    def __init__(self):
        self.used = 0

    def add(self, r: TaskResult) -> None:
        self.used += r.expanded

    @property
    def reached(self) -> bool:
        return self.used >= limits.RUN_EXPANDED_CAP

    def skipped(self, spec: InputSpec, index: int) -> TaskResult:
        out = TaskResult(index=index)
        out.inputs.append(
            _acct(
                spec.path,
                None,
                "unreadable",
                f"not read: the run reached its {limits.human(limits.RUN_EXPANDED_CAP)} cap on decompressed bytes",
                0,
                out,
            )
        )
        return out


def process_spec(spec: InputSpec, index: int = 0, year: int | None = None) -> TaskResult:
    t0 = time.perf_counter()
    out = TaskResult(index=index)
    if spec.kind == "skipped":
        out.inputs.append(_acct(spec.path, None, "skipped", spec.reason, 0, out))
        out.seconds = time.perf_counter() - t0
        return out
    listed = _Listing(spec.path, out)
    try:
        if spec.kind == "journal-dir":
            _journal(spec, out, year)
        else:
            budget = Budget(limits.TASK_EXPANDED_CAP)  # every member of this input together
            try:
                for log in open_logs(spec.path, budget, walked=spec.walked):
                    _member(spec, log, out, year, listed)
            finally:
                out.expanded = budget.total - budget.left
    except Skipped as exc:
        out.inputs.append(_acct(spec.path, None, "skipped", str(exc), 0, out))
    except Unreadable as exc:
        out.inputs.append(_acct(spec.path, None, "unreadable", str(exc), 0, out))
    except Exception as exc:  # noqa: BLE001 - one bad input never stops the batch; its reason is reported
        out.inputs.append(
            _acct(spec.path, None, "unreadable", f"internal error: {type(exc).__name__}: {str(exc)[:160]}", 0, out)
        )
    listed.close()
    out.seconds = time.perf_counter() - t0
    return out


class _Listing:
    """Of an archive's members that gave nothing (empty, skipped), the first MAX_LISTED are listed one by one and the
    rest counted in one entry: a 200 000-member tar bomb costs a bounded report."""

    def __init__(self, source: str, out: TaskResult):
        self.source, self.out = source, out
        self.quiet = 0
        self.more: dict[str, int] = {}

    def add(self, entry: dict) -> None:
        if entry["member"] is not None and entry["status"] in ("empty", "skipped") and not entry["attempts"]:
            self.quiet += 1
            if self.quiet > limits.MAX_LISTED:
                self.more[entry["status"]] = self.more.get(entry["status"], 0) + 1
                return
        self.out.inputs.append(entry)

    def close(self) -> None:
        for status, n in sorted(self.more.items()):
            self.out.inputs.append(
                _acct(
                    self.source,
                    f"({n} more {status} members)",
                    status,
                    f"{n} more members gave nothing; only the first {limits.MAX_LISTED} are listed one by one",
                    0,
                    self.out,
                )
            )


def _member(spec: InputSpec, log: LogStream, out: TaskResult, year: int | None, listed: _Listing) -> None:
    """One log of an input (the file, or one tar member): skipped, refused or read, with its own accounting."""
    sub = TaskResult(index=out.index)
    if log.skip is not None:
        sub.inputs.append(_acct(spec.path, log.member, "skipped", log.skip, 0, sub))
    elif log.unreadable is not None:
        sub.inputs.append(_acct(spec.path, log.member, "unreadable", log.unreadable, 0, sub))
    elif log.member is not None and log.member.lower().endswith(NOT_LOG_SUFFIXES):
        sub.inputs.append(
            _acct(
                spec.path,
                log.member,
                "skipped",
                f"not a log (a {os.path.splitext(log.member)[1].lower()} file)",
                0,
                sub,
            )
        )
    else:
        _one_log(spec, log, sub, year)
    out.rows.extend(sub.rows)
    out.bytes += sub.bytes
    out.lines += sub.lines
    for entry in sub.inputs:
        listed.add(entry)


def _acct(source, member, status, reason, attempts, out: TaskResult, nbytes=0, lines=0) -> dict:
    return {
        "source": source,
        "member": member,
        "status": status,
        "reason": reason,
        "attempts": attempts,
        "bytes": nbytes,
        "lines": lines,
    }


def _year(log: LogStream, year: int | None) -> tuple[int, str]:
    if year:
        return year, "--year"
    if log.mtime:
        return datetime.fromtimestamp(log.mtime).year, "file metadata"
    return datetime.now().year, "current year"


def _one_log(spec: InputSpec, log: LogStream, out: TaskResult, year: int | None) -> None:
    y, ysrc = _year(log, year)
    meta = {"source": spec.path, "member": log.member, "year": y, "year_source": ysrc, "mtime": log.mtime}
    if log.journal:
        _journal_stream(spec, log, out, meta)
        return
    head = _head(spec, log, out)
    if head is None:
        return
    from logdoctor.input.formats.journal_export import looks_like_export

    if looks_like_export(head):
        _export(spec, log, head, out, meta)
        return
    why = _binary(head, more=len(head) == 65536)
    if why:  # the policy explain applies (intake.sniff): only binary junk is refused; the member's rest is skipped
        out.inputs.append(_acct(spec.path, log.member, "unreadable", why, 0, out, len(head)))
        return
    stream, head, policy = repaired_stream(log.stream, head)
    stats = ScanStats()
    rows, reason = _scan_rows(stream, head, stats, meta, log)
    stopped = log.opened.stopped if log.opened else None
    if stopped and reason is None:
        reason = stopped + (f"; {len(rows)} attempts read before it" if rows else "")
    counts: Counter = Counter()
    for r in rows:  # attempts numbered per log (per unit of a journal of several services), oldest first
        counts[r.get("_part")] += 1
        r["attempt"] = counts[r.pop("_part", None)]
        r.pop("_start", None)
    notes = (log.opened.notes if log.opened else []) + policy.notes
    out.bytes += stats.bytes
    out.lines += stats.lines
    _account(spec, log, out, rows, reason, notes, head, stats)


def _head(spec: InputSpec, log: LogStream, out: TaskResult) -> bytes | None:
    """The log's first 64 KiB, or None when it is unreadable or empty (accounted for here)."""
    try:
        head = log.stream.read(65536)
    except Exception as exc:  # noqa: BLE001 - corrupt compressed data surfaces on read
        out.inputs.append(_acct(spec.path, log.member, "unreadable", _bad_data(log, exc), 0, out))
        return None
    if not head.strip():
        stopped = log.opened.stopped if log.opened else None
        out.inputs.append(
            _acct(
                spec.path,
                log.member,
                "unreadable" if stopped else "empty",
                f"nothing could be read: {stopped}" if stopped else "no log lines",
                0,
                out,
                len(head),
            )
        )
        return None
    return head


def _scan_rows(stream, head: bytes, stats: ScanStats, meta: dict, log: LogStream) -> tuple[list[dict], str | None]:
    """The rows of every attempt segment of the stream, and why reading stopped early (None: it did not)."""
    rows: list[dict] = []
    # the reduced lines of the last few attempts: rules that compare attempts (a retry after a pool fix, a failure
    # across configs) see them when a failing attempt is diagnosed
    context: deque = deque(maxlen=CONTEXT_ATTEMPTS)
    try:
        for seg in scan(stream, prefilter(), first=head, stats=stats):
            reduced = _text(seg.lines(full=False))
            # a failure word is only a cue (an NCCL INFO "Failed to open libibverbs" is in every healthy IB-less
            # start): the reduced lines hold every line the prefilter hit, so an attempt they show healthy is
            # healthy; one they show failing is read again in full, with the attempts before it as context. A
            # small segment with a cue is read in full straight away: the check would cost about what it saves
            # (an analysis costs milliseconds whatever its length, and most such segments fail)
            direct = seg.signal and not seg.overflow and seg.raw_bytes <= DIRECT_SEGMENT
            got = None if direct else analyse_lines(reduced, meta, healthy_only=seg.signal)
            if got is None:
                lines = _text(seg.lines(full=True))
                if context:
                    prior = [x for c in context for x in c]
                    got = analyse_lines(prior + lines, meta, min_start=seg.first_line)
                else:
                    got = analyse_lines(lines, meta)
            rows.extend(got or [])
            context.append(reduced)
    except Exception as exc:  # noqa: BLE001 - a stream that breaks mid-way: keep what was read, say why
        return rows, _bad_data(log, exc) + (f"; {len(rows)} attempts read before it" if rows else "")
    return rows, None


def _account(
    spec: InputSpec,
    log: LogStream,
    out: TaskResult,
    rows: list[dict],
    reason: str | None,
    notes: list[str],
    head: bytes,
    stats: ScanStats,
) -> None:
    """The log's rows and its accounting entry: unreadable (with the rows read before), empty, not a log, or
    diagnosed / healthy."""
    if reason:
        out.rows.extend(rows)
        out.inputs.append(_acct(spec.path, log.member, "unreadable", reason, len(rows), out, stats.bytes, stats.lines))
    elif not rows:
        out.inputs.append(_acct(spec.path, log.member, "empty", NO_SERVICE, 0, out, stats.bytes, stats.lines))
    elif not any(r["outcome"] == "failed" for r in rows) and not looks_like_log(head):
        # a manifest or a notes file that names the engine is not a healthy run
        out.inputs.append(_acct(spec.path, log.member, "skipped", NOT_A_LOG, 0, out, stats.bytes, stats.lines))
    else:
        out.rows.extend(rows)
        status = "diagnosed" if any(r["outcome"] == "failed" for r in rows) else "healthy"
        out.inputs.append(
            _acct(spec.path, log.member, status, "; ".join(notes) or None, len(rows), out, stats.bytes, stats.lines)
        )


NOT_A_LOG = "not a log (no timestamped or levelled line in its first 64 KiB)"
# a log line carries a clock time (every journal, engine and container prefix), a level word at its start, or is a
# structured entry (journalctl -o json, docker's json-file, JSON loggers)
_LOG_LINE = re.compile(
    rb"(?m)^(?:[^\n]{0,400}?(?<!\d)\d\d:\d\d:\d\d(?!\d)|\s*\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|\[\s*\d+\.\d{6}\]"
    rb"|\x1e?\{[^\n]*\"(?:MESSAGE|__REALTIME_TIMESTAMP|log|msg|message|time|timestamp|ts|level)\"\s*:)"
)


def looks_like_log(head: bytes) -> bool:
    """At least two lines of log shape (or the only line, in a one-line input)."""
    n = 0
    for _ in _LOG_LINE.finditer(head):
        n += 1
        if n >= 2:
            return True
    return n >= 1 and head.count(b"\n", 0, len(head) - 1) == 0


def _clean(rows: list[dict]) -> list[dict]:
    for r in rows:
        r.pop("_start", None)
        r.pop("_part", None)
    return rows


def _text(lines: list[tuple[int, bytes]]) -> list[tuple[int, str]]:
    # a NUL after the head (the head's are repaired with the stream) is replaced as explain's reader does
    return [(n, b.decode("utf-8", "replace").rstrip("\r").replace("\x00", "\ufffd")) for n, b in lines]


def _bad_data(log: LogStream, exc: BaseException) -> str:
    kind = f"{log.compression} data" if log.compression else "data"
    text = (str(exc) or type(exc).__name__).splitlines()[0][:160]
    return f"corrupt or truncated {kind} ({text})"


def _binary(head: bytes, more: bool) -> str | None:
    """explain's refusal (intake.sniff) on the same sample: binary junk only; NUL bytes and UTF-16 are repaired."""
    from logdoctor.core.errors import InputError
    from logdoctor.input.intake import sniff

    try:
        sniff(head, "", partial=more)
    except InputError as exc:
        return str(exc).removeprefix(": ").split(" — ", 1)[0]
    return None


def _export(spec, log, head, out, meta) -> None:
    """journalctl -o export text: entries span lines, so it is read whole (bounded by the source's limit)."""
    from logdoctor.input.read import read_bytes
    from logdoctor.triage.analyse import analyse_records

    data = head + log.stream.read()
    res = read_bytes(data, spec.path)
    rows = _clean(analyse_records(res.records, res.stats.read, meta) or [])
    out.rows.extend(rows)
    out.bytes += len(data)
    out.lines += res.stats.read
    status = "diagnosed" if any(r["outcome"] == "failed" for r in rows) else "healthy" if rows else "empty"
    out.inputs.append(
        _acct(spec.path, log.member, status, None if rows else NO_SERVICE, len(rows), out, len(data), res.stats.read)
    )


def _journal(spec: InputSpec, out: TaskResult, year) -> None:
    from logdoctor.core.errors import LogdoctorError
    from logdoctor.input.sources.journal import iter_journal_entries

    meta = {"source": spec.path, "member": None, "year": None, "year_source": "log", "mtime": None}
    try:
        entries = list(iter_journal_entries(files=list(spec.files)))
    except LogdoctorError as exc:
        out.inputs.append(
            _acct(spec.path, None, "unreadable", str(exc).removeprefix(spec.path + ": "), 0, out, spec.size)
        )
        return
    _journal_entries(spec.path, None, entries, out, meta, spec.size)


def _journal_stream(spec, log: LogStream, out: TaskResult, meta) -> None:
    """A .journal inside a tar (or compressed): the journal reader needs a file, so it goes to a temporary one."""
    import tempfile

    from logdoctor.core.errors import LogdoctorError
    from logdoctor.input.sources.journal import iter_journal_entries

    with tempfile.TemporaryDirectory(prefix="logdoctor-triage-") as tmp:
        path = os.path.join(tmp, "member.journal")
        size = 0
        with open(path, "wb") as fh:
            while chunk := log.stream.read(1 << 20):
                size += len(chunk)
                if size > limits.JOURNAL_MEMBER_CAP:
                    break
                fh.write(chunk)
        if size > limits.JOURNAL_MEMBER_CAP:
            out.inputs.append(
                _acct(
                    spec.path,
                    log.member,
                    "unreadable",
                    f"a journal file over the"
                    f" {limits.human(limits.JOURNAL_MEMBER_CAP)} cap for journal members; extract it"
                    " and triage the folder",
                    0,
                    out,
                    size,
                )
            )
            return
        try:
            entries = list(iter_journal_entries(files=[path]))
        except LogdoctorError as exc:
            out.inputs.append(
                _acct(
                    spec.path,
                    log.member,
                    "unreadable",
                    str(exc).replace(f"journal file {path}", "journal file").replace(path, ""),
                    0,
                    out,
                    size,
                )
            )
            return
    _journal_entries(spec.path, log.member, entries, out, dict(meta, year_source="log"), size)


def _journal_entries(source, member, entries, out: TaskResult, meta, size) -> None:
    if not entries:
        out.inputs.append(_acct(source, member, "empty", "no journal entries", 0, out, size))
        return
    rows = _clean(analyse_entries(entries, meta))
    out.rows.extend(rows)
    out.bytes += size
    out.lines += len(entries)
    status = "diagnosed" if any(r["outcome"] == "failed" for r in rows) else "healthy" if rows else "empty"
    out.inputs.append(_acct(source, member, status, None if rows else NO_SERVICE, len(rows), out, size, len(entries)))


# --- executors -------------------------------------------------------------------------------------------------


def run_local(
    specs: list[InputSpec], jobs: int, year: int | None, progress=None, while_waiting=None
) -> list[TaskResult]:
    """Process the inputs here (jobs 1) or in a pool of forked workers; `while_waiting` runs in the parent once
    every worker has been started (work the parent would otherwise do after them, not before a fork)."""
    results: list[TaskResult] = []
    cap = _RunCap()
    if jobs <= 1 or len(specs) <= 1:
        for i, s in enumerate(specs):
            r = cap.skipped(s, i) if cap.reached else process_spec(s, i, year)
            cap.add(r)
            results.append(r)
            if progress:
                progress(s, r)
        return results
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    fork = sys.platform.startswith("linux")  # fork: no __main__ guard needed in callers
    ctx = mp.get_context("fork" if fork else "spawn")
    if fork:
        _warm()  # rules, classifier and prefilter load once, here; the workers share them copy-on-write
        import gc

        gc.freeze()  # ... and a worker's garbage collections do not touch (and so copy) every inherited page
    order = work_order(specs)  # the long tasks start early, the small ones fill the gaps
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=None if fork else _warm) as ex:
            futs = {ex.submit(process_spec, specs[i], i, year): i for i in order}
            if while_waiting is not None:
                while_waiting()
            for f in as_completed(futs):
                r = cap.skipped(specs[futs[f]], futs[f]) if f.cancelled() else f.result()
                cap.add(r)
                if cap.reached:  # inputs not started yet are listed, not read
                    for other in futs:
                        other.cancel()
                results.append(r)
                if progress:
                    progress(specs[futs[f]], r)
    finally:
        if fork:
            import gc

            gc.unfreeze()  # the caller's process collects as before
    return sorted(results, key=lambda r: r.index)


_ARCHIVE_NAMES = (".tar", ".tgz", ".tar.gz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tar.zst")


def work_order(specs: list[InputSpec]) -> list[int]:
    """The order a pool takes the inputs in: the largest expected work first, so that the long tasks start early and
    the small ones fill the gaps at the end (a long task taken last leaves the other workers idle). The work is
    guessed from the file alone: an archive's members are unknown until read, and a bundle of bug-report snippets
    (small logs that all fail, each diagnosed in full) costs more per byte than anything else, so archives go first;
    a gzip file counts by the uncompressed size its trailer states, not by its compressed size. The order changes
    nothing in the results, which are put back in spec order."""
    return sorted(range(len(specs)), key=lambda i: _expected_work(specs[i]))


def _expected_work(spec: InputSpec) -> tuple[int, int]:
    if spec.kind != "file":
        return 1, -spec.size
    name = spec.path.lower()
    if name.endswith(_ARCHIVE_NAMES):
        return 0, -spec.size
    return 1, -max(spec.size, _gzip_size(spec.path) if name.endswith(".gz") else 0)


def _gzip_size(path: str) -> int:
    """A gzip file's uncompressed size from its trailer (ISIZE: modulo 4 GiB, of its last member), 0 when it cannot
    be read cheaply (not a regular file, not gzip, unreadable)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size < 18:
            return 0
        with open(path, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return 0
            fh.seek(-4, os.SEEK_END)
            return int.from_bytes(fh.read(4), "little")
    except OSError:
        return 0


def _warm() -> None:
    """What every task needs, loaded before the workers fork (they share it) rather than once in each: the rules,
    the classifier, the prefilter, and the modules a task imports lazily (numpy for the scanner's newline counts,
    the reader, the timeline, the diagnosis, pyparsing for vLLM's config line)."""
    import importlib

    from logdoctor.matching import prefilter as rule_prefilter
    from logdoctor.triage.analyse import _pipeline

    rules, _ = _pipeline()
    prefilter()
    rule_prefilter.warm(rules)
    for name in _TASK_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional extra that is missing: the task that needs it says so itself
            if name.startswith("logdoctor."):
                raise  # our own module: a stale name here would silently cost every worker the import again


_TASK_MODULES = (
    "numpy",
    "logdoctor.input.read",
    "logdoctor.timeline.build",
    "logdoctor.verdict.api",
    "logdoctor.engines.config_dump",
    "logdoctor.engines.config_fast",
    "logdoctor.verdict.evidence",
    "logdoctor.matching.catalogues.resolve",
    "logdoctor.matching.template",
    "logdoctor.input.formats.journal_export",
    "logdoctor.input.intake",
    "logdoctor.scan.sources",
)


def run_dask(specs: list[InputSpec], scheduler, year: int | None, progress=None) -> list[TaskResult]:
    """Each spec is one Dask task; the workers must see the same paths (a shared or network file system)."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        from logdoctor.core.errors import UsageError

        raise UsageError("--scheduler needs Dask: pip install 'logdoctor[dask]'") from None
    own = not hasattr(scheduler, "submit")
    client = Client(scheduler, set_as_default=False) if own else scheduler
    try:
        order = work_order(specs)
        futs = {
            client.submit(
                process_spec, specs[i], i, year, pure=False, key=f"logdoctor-triage-{i}-{os.getpid()}-{time.time_ns()}"
            ): i
            for i in order
        }
        done: list[TaskResult] = []
        with client.as_current():
            for f in as_completed(list(futs)):
                r = f.result()
                done.append(r)
                if progress:
                    progress(specs[futs[f]], r)
        return sorted(done, key=lambda r: r.index)
    finally:
        if own:
            client.close()
