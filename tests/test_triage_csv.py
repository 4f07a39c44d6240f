"""`triage --format csv` with no filter is written from the run's rows, without pandas (report.rows_csv); it must be
byte for byte what the frame's `to_csv` writes, on real runs and on the cells whose formatting pandas decides."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from logdoctor.triage import _frame, report, run  # noqa: E402
from logdoctor.triage.analyse import COLUMNS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "journals"


def _via_frame(rows: list[dict]) -> str:
    buf = io.StringIO()
    report.to_csv(_frame(rows, []), buf)
    return buf.getvalue()


def _row(**cells) -> dict:
    return {c: None for c in COLUMNS} | {"source": "x.log", "status": "healthy"} | cells


def test_rows_csv_is_the_frames_csv_on_fixtures(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"\x00\x01\x02\x03" * 400)  # an unreadable input: a row of Nones with a reason
    res = run([str(FIX), str(bad)], jobs=2, frame=False)
    assert res._frame is None  # nothing built the frame yet
    text = report.rows_csv(res.rows, COLUMNS)
    assert text is not None and text.count("\n") > 100
    assert text == _via_frame(res.rows)


@pytest.mark.parametrize(
    "times",
    [
        [datetime(2026, 5, 1), None],  # midnights only: the date alone
        [datetime(2026, 5, 1, 10, 0, 1), datetime(2026, 5, 1)],  # to the second
        [datetime(2026, 5, 1, 10, 0, 1, 5000), datetime(2026, 5, 1, 3)],  # to the millisecond
        [datetime(2026, 5, 1, 10, 0, 1, 5), datetime(2026, 5, 1, 3)],  # to the microsecond
        [None, None],
        [],
    ],
)
def test_time_precision_as_pandas(times):
    rows = [_row(start_time=t, attempt=i + 1, confidence=0.5, lines=3) for i, t in enumerate(times)]
    assert report.rows_csv(rows, COLUMNS) == _via_frame(rows)


def test_cells_as_pandas():
    rows = [
        _row(evidence='a, "quoted"\nsecond line', first_fix="=SUM(A1)", confidence=1.0, evidence_line=7, lines=0),
        _row(host="h1", unit="", confidence=0.333, attempt=2, reason="-x", frames="a > b", cause="\r\nx"),
        _row(status="empty", reason="no log lines"),
    ]
    assert report.rows_csv(rows, COLUMNS) == _via_frame(rows)


def test_unknown_cell_type_falls_back():
    assert report.rows_csv([_row(rank=3)], COLUMNS) is None  # an int in a text column: pandas decides
    assert report.rows_csv([_row(start_time="2026-05-01")], COLUMNS) is None


def test_cli_csv_imports_no_pandas(tmp_path):
    log = FIX / "seed-attempt1-kv-oom" / "journal.log"
    code = (
        "import sys, runpy; sys.argv = ['logdoctor', 'triage', sys.argv[1], '--jobs', '1', '--format', 'csv'];"
        "import atexit; atexit.register(lambda: sys.stderr.write('PANDAS=%s' % ('pandas' in sys.modules)));"
        "runpy.run_module('logdoctor', run_name='__main__')"
    )
    p = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=300)
    assert "PANDAS=False" in p.stderr, p.stderr[-2000:]
    assert p.stdout.startswith("source,member,host,")
