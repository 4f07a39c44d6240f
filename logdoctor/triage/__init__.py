"""Batch triage of archived logs: one row per attempt, signatures, host suspects, reports; local or on Dask.

    import logdoctor
    df = logdoctor.triage(["/archive/fleet-2026-05/"], jobs=2)          # pandas.DataFrame
    df = logdoctor.triage(paths, scheduler="tcp://dask-scheduler:8786")  # same frame, run on a Dask cluster

The frame has one row per attempt (status `diagnosed` or `healthy`) and one row per input that gave no attempt
(status `empty` or `unreadable`, with `reason`), so every input is accounted for. `df.attrs["inputs"]` lists every
log read (tar members included) with its status; docs/triage.md describes the columns.
"""

from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass, field

from logdoctor.triage.analyse import COLUMNS


@dataclass
class TriageRun:
    """What one run produced, before any filter: the rows (dicts, one per attempt or input without one, in COLUMNS),
    their frame and the accounting. The frame is built from the rows when first asked for: an export written from
    the rows alone (csv) never imports pandas."""

    rows: list[dict] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)
    bytes: int = 0
    lines: int = 0
    seconds: float = 0.0
    _frame: object = field(default=None, repr=False)

    @property
    def frame(self):  # pandas.DataFrame
        if self._frame is None:
            self._frame = _frame(self.rows, self.inputs)
        return self._frame

    @property
    def unreadable(self) -> list[dict]:
        return [i for i in self.inputs if i["status"] == "unreadable"]


def run(
    paths,
    *,
    jobs: int | None = None,
    scheduler=None,
    year: int | None = None,
    progress: bool = False,
    frame: bool = True,
) -> TriageRun:
    """Triage `paths`. `frame`: build the pandas frame now (its import overlaps the workers' scan); False leaves it
    to the first use of `TriageRun.frame`, for a caller that may not need it."""
    import time

    from logdoctor.core.errors import UsageError
    from logdoctor.triage import runner
    from logdoctor.triage.inputs import expand

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [str(p) for p in paths]
    if not paths:
        raise UsageError("triage needs at least one PATH")
    t0 = time.perf_counter()
    specs, missing = expand(paths)
    bar = _progress(specs) if progress else None
    cb = bar.update if bar else None
    try:
        if scheduler is not None:
            results = runner.run_dask(specs, scheduler, year, cb)
        else:
            # pandas is needed only for the frame at the end: the parent imports it while its workers scan
            results = runner.run_local(
                specs, jobs or os.cpu_count() or 1, year, cb, while_waiting=_import_pandas if frame else None
            )
    finally:
        if bar:
            bar.close()
    rows: list[dict] = []
    inputs: list[dict] = [
        {"source": p, "member": None, "status": "unreadable", "reason": why, "attempts": 0, "bytes": 0, "lines": 0}
        for p, why in missing
    ]
    for r in results:
        rows.extend(r.rows)
        inputs.extend(r.inputs)
    for acc in inputs:  # inputs without an attempt still get a row, so every export lists them
        if acc["status"] in ("empty", "unreadable") and not acc["attempts"]:
            rows.append(
                {c: None for c in COLUMNS}
                | {"source": acc["source"], "member": acc["member"], "status": acc["status"], "reason": acc["reason"]}
            )
        elif acc["status"] == "unreadable":  # partly read: its rows carry the reason too
            for row in rows:
                if row["source"] == acc["source"] and row["member"] == acc["member"]:
                    row["reason"] = acc["reason"]
    out = TriageRun(rows=rows, inputs=inputs, bytes=sum(r.bytes for r in results), lines=sum(r.lines for r in results))
    if frame:
        out.frame  # noqa: B018 - built inside the timed run, as before
    out.seconds = time.perf_counter() - t0
    return out


def _frame(rows: list[dict], inputs: list[dict]):
    import pandas as pd

    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df["start_time"] = pd.to_datetime(df["start_time"])
    df["confidence"] = df["confidence"].astype("float64")
    for c in ("attempt", "evidence_line", "lines"):
        df[c] = df[c].astype("Int64")
    df.attrs["inputs"] = inputs
    return df


def _import_pandas() -> None:
    import threading

    threading.Thread(target=__import__, args=("pandas",), name="import-pandas", daemon=True).start()


def triage(paths, *, jobs: int | None = None, scheduler=None, year: int | None = None):
    """Triage logs (files, folders, globs, archives, journal files) → pandas.DataFrame, one row per attempt."""
    return run(paths, jobs=jobs, scheduler=scheduler, year=year).frame


def apply_filters(df, *, since=None, until=None, hosts=(), causes=()):
    """--since/--until (attempt start time), --host, --cause; rows of empty/unreadable inputs always stay."""
    import pandas as pd

    keep = df["status"].isin(["empty", "unreadable"])
    m = ~keep
    if since is not None:
        m &= df["start_time"] >= pd.Timestamp(since)
    if until is not None:
        m &= df["start_time"] <= pd.Timestamp(until)
    if hosts:
        m &= df["host"].isin(list(hosts))
    if causes:
        m &= df["cause"].isin(list(causes))
    return df[keep | m].reset_index(drop=True)


def _progress(specs):
    """A progress bar on a terminal only (files, MB, rate, ETA)."""
    import sys

    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    total = sum(s.size for s in specs)
    import shutil

    size = shutil.get_terminal_size((100, 24))  # a fresh pty reports 0x0: tqdm would hide the bar (row >= 0 rows)
    bar = tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=f"triage 0/{len(specs)} files",
        file=sys.stderr,
        ncols=size.columns if size.columns > 20 else 100,
        nrows=size.lines if size.lines > 1 else 24,
        mininterval=0.2,
    )
    done = [0]

    class Bar:
        def update(self, spec, result):
            done[0] += 1
            bar.set_description(f"triage {done[0]}/{len(specs)} files", refresh=False)
            bar.update(spec.size)

        def close(self):
            bar.close()

    return Bar()


class _CallableModule(types.ModuleType):
    """Importing this subpackage rebinds `logdoctor.triage` to the module; calling the module keeps
    `logdoctor.triage(paths, ...)` (design.md) working either way."""

    def __call__(self, paths, *, jobs=None, scheduler=None, year=None):
        return triage(paths, jobs=jobs, scheduler=scheduler, year=year)


sys.modules[__name__].__class__ = _CallableModule
