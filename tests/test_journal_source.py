"""logdoctor.input.sources.journal against real .journal files (built with systemd-journal-remote from export fixtures).

Every read is done through both backends (systemd-python and `journalctl -o json`) and the normalised entries must
be identical. Skipped only when systemd-journal-remote is not installed (the journal_file fixture skips).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from journal_export import make_journal, read_export, write_export

from logdoctor.core.errors import InputError, UsageError
from logdoctor.input.sources import journal as jmod
from logdoctor.input.sources.journal import iter_journal_entries, mangle_unit, parse_since

REPO = Path(__file__).resolve().parents[1]
EXPORT_DIR = REPO / "fixtures" / "journals" / "formats" / "export"
SGLANG_EXPORT = EXPORT_DIR / "sglang-tp2-graph-capture.export"
BACKENDS = ("systemd", "journalctl")


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_exports", EXPORT_DIR / "build_exports.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _load_builder()
UNIT = B.UNIT
EXPECTED = [{k: v.decode("utf-8", "replace") for k, v in e.items()} for e in read_export(SGLANG_EXPORT.read_bytes())]


def _ts(s: str) -> int:
    return int(datetime.strptime(s, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()) * 1_000_000


def _set_tz(value: str | None) -> None:
    if value is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = value
    time.tzset()


@pytest.fixture(autouse=True)
def utc():
    """TZ=UTC for every test here (--since without a zone is local time); restored afterwards."""
    old = os.environ.get("TZ")
    _set_tz("UTC")
    yield
    _set_tz(old)


@pytest.fixture
def sglang_journal(journal_file) -> Path:
    return journal_file(SGLANG_EXPORT, name="sglang.journal")


def read(backend: str, **kw) -> list[dict[str, str]]:
    return list(iter_journal_entries(prefer=backend, **kw))


def read_both(**kw) -> list[dict[str, str]]:
    """Read through both backends, assert identical normalised entries, return them."""
    py = read("systemd", **kw)
    jc = read("journalctl", **kw)
    assert py == jc
    return py


def messages(entries) -> list[str]:
    return [e["MESSAGE"] for e in entries]


def unit_lines(entries, unit=UNIT):
    """journalctl -u semantics, written out independently: the unit's own lines + PID 1's lines about it."""
    return [e for e in entries if e.get("_SYSTEMD_UNIT") == unit or (e.get("UNIT") == unit and e.get("_PID") == "1")]


# ---------------------------------------------------------------------------------------------------------------
# the export helper and the committed fixtures


def test_committed_exports_are_what_the_builder_writes():
    for name, build in B.FIXTURES.items():
        assert (EXPORT_DIR / name).read_bytes() == write_export(build()), (
            f"regenerate: python {EXPORT_DIR}/build_exports.py"
        )


def test_fixture_covers_what_the_tests_need():
    kinds = {e.get("_TRANSPORT") for e in EXPECTED}
    assert {"kernel", "stdout", "journal"} <= kinds
    assert {e["_BOOT_ID"] for e in EXPECTED} == {B.BOOT1, B.BOOT2}
    assert any("NVRM: Xid" in e["MESSAGE"] and e["_TRANSPORT"] == "kernel" for e in EXPECTED)
    assert any("Out of memory: Killed process" in e["MESSAGE"] and e["_TRANSPORT"] == "kernel" for e in EXPECTED)
    assert any(e.get("_SYSTEMD_UNIT") == B.OTHER_UNIT for e in EXPECTED)
    assert any(e.get("UNIT") == B.OTHER_UNIT and e.get("_PID") == "1" for e in EXPECTED)
    assert any(len(e["MESSAGE"].encode()) > 4096 for e in EXPECTED)
    assert any("\x1b[" in e["MESSAGE"] for e in EXPECTED)
    assert any(e["MESSAGE"].count("\n") > 20 for e in EXPECTED)


def test_export_roundtrip_binary_fields():
    entries = [
        {"__REALTIME_TIMESTAMP": "1", "MESSAGE": "plain", "_PID": "5"},
        {"__REALTIME_TIMESTAMP": "2", "MESSAGE": "two\nlines", "X": b"bad\xffutf8", "Y": "tab\there", "Z": "\x1b[1m"},
        {"__REALTIME_TIMESTAMP": "3", "MESSAGE": "", "BIG": "x" * 70000},
    ]
    data = write_export(entries)
    assert b"MESSAGE=plain\n" in data and b"MESSAGE\n" in data  # text form and binary form
    back = read_export(data)
    assert back == [{k: v.encode() if isinstance(v, str) else v for k, v in e.items()} for e in entries]


def test_write_export_refuses_entries_journal_remote_would_drop():
    with pytest.raises(ValueError, match="__REALTIME_TIMESTAMP"):
        write_export([{"MESSAGE": "no timestamp"}])
    with pytest.raises(ValueError, match="field name"):
        write_export([{"__REALTIME_TIMESTAMP": "1", "bad name": "x"}])


def test_make_journal_checks_the_written_count(journal_file, tmp_path):
    # journal-remote drops an entry without __REALTIME_TIMESTAMP when no earlier entry gave it one (a later entry
    # inherits the previous timestamp instead), and still exits 0
    raw = b"MESSAGE=dropped: no timestamp\n\n__REALTIME_TIMESTAMP=1735725600000000\nMESSAGE=kept\n\n"
    with pytest.raises(RuntimeError, match="wrote 1 of 2"):
        make_journal(raw, tmp_path / "short.journal")
    path = journal_file([{"__REALTIME_TIMESTAMP": "1735725600000000", "MESSAGE": "one"}], name="one.journal")
    # journal-remote appends to an existing file: make_journal removes it first
    path = journal_file([{"__REALTIME_TIMESTAMP": "1735725600000000", "MESSAGE": "two"}], name="one.journal")
    assert messages(read_both(files=[path])) == ["two"]


# ---------------------------------------------------------------------------------------------------------------
# reading back: both backends, identical normalised entries


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"unit": "sglang-qwen"},
        {"unit": "sglang-qwen.service", "boot": True},
        {"unit": "sglang-*"},
        {"unit": "nginx"},
        {"lines": 7},
        {"unit": "sglang-qwen", "lines": 3},
        {"boot": "-1"},
        {"boot": 1},
        {"since": "2025-03-10 09:13:40"},
        {"since": "2025-03-10 09:13:40", "lines": 4},
        {"unit": "sglang-qwen", "boot": B.BOOT1, "lines": 2},
    ],
    ids=repr,
)
def test_backends_give_identical_entries(sglang_journal, kw):
    entries = read_both(files=[sglang_journal], **kw)
    assert entries, "every case here selects something"
    for e in entries:
        assert all(type(k) is str and type(v) is str for k, v in e.items())


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_entry_and_field_comes_back(sglang_journal, backend):
    got = read(backend, files=[sglang_journal])
    assert len(got) == len(EXPECTED)
    for exp, e in zip(EXPECTED, got):
        for key, value in exp.items():
            assert e[key] == value, key
        assert set(e) - set(exp) <= {"__CURSOR"}
        assert e["__CURSOR"].startswith("s=")
    # oldest first
    rts = [int(e["__REALTIME_TIMESTAMP"]) for e in got]
    assert rts == sorted(rts)


def test_normalised_shape(sglang_journal):
    e = next(x for x in read_both(files=[sglang_journal]) if x.get("_PID") == "1" and x.get("UNIT") == UNIT)
    for key in (
        "MESSAGE",
        "__REALTIME_TIMESTAMP",
        "__MONOTONIC_TIMESTAMP",
        "_BOOT_ID",
        "_HOSTNAME",
        "SYSLOG_IDENTIFIER",
        "_COMM",
        "_PID",
        "PRIORITY",
        "_TRANSPORT",
        "_SYSTEMD_UNIT",
        "UNIT",
    ):
        assert isinstance(e[key], str), key
    assert e["__REALTIME_TIMESTAMP"].isdigit() and e["__MONOTONIC_TIMESTAMP"].isdigit()
    assert len(e["_BOOT_ID"]) == 32 and int(e["_BOOT_ID"], 16) >= 0
    assert e["PRIORITY"] in "01234567"


def test_missing_fields_get_defaults(journal_file):
    path = journal_file([{"__REALTIME_TIMESTAMP": "1735725600000000", "FOO": "bar"}])
    (e,) = read_both(files=[path])
    assert e["MESSAGE"] == "" and e["FOO"] == "bar"
    assert e["_BOOT_ID"] == "0" * 32 and e["__MONOTONIC_TIMESTAMP"] == "0"


# ---------------------------------------------------------------------------------------------------------------
# filters


def test_unit_filter_copies_journalctl(sglang_journal):
    got = read_both(files=[sglang_journal], unit="sglang-qwen")
    assert messages(got) == messages(unit_lines(EXPECTED))
    msgs = messages(got)
    assert f"{UNIT}: Main process exited, code=killed, status=9/KILL" in msgs
    assert f"{UNIT}: Failed with result 'oom-kill'." in msgs
    assert f"{UNIT}: Failed with result 'signal'." in msgs
    assert not any(e.get("_TRANSPORT") == "kernel" for e in got)  # Xid and OOM-killer lines are not the unit's
    assert not any("NVRM" in m or "Out of memory" in m for m in msgs)
    assert not any(B.OTHER_UNIT in (e.get("_SYSTEMD_UNIT"), e.get("UNIT")) for e in got)
    assert read_both(files=[sglang_journal], unit="sglang-qwen.service") == got
    assert read_both(files=[sglang_journal], unit="sglang-q*") == got


def test_unit_filter_edge_cases(journal_file):
    u = "x.service"
    base = {"_HOSTNAME": "h", "_BOOT_ID": "ab" * 16}
    rows = [
        ("own", {"_SYSTEMD_UNIT": u, "_PID": "77"}),
        ("pid1", {"_PID": "1", "UNIT": u, "_SYSTEMD_UNIT": "init.scope"}),
        ("coredump", {"MESSAGE_ID": jmod._COREDUMP_MESSAGE_ID, "_UID": "0", "COREDUMP_UNIT": u, "_PID": "900"}),
        ("object", {"_UID": "0", "OBJECT_SYSTEMD_UNIT": u, "_PID": "901"}),
        ("not-pid1", {"_PID": "77", "UNIT": u}),
        ("object-non-root", {"_UID": "1000", "OBJECT_SYSTEMD_UNIT": u}),
        ("coredump-other", {"MESSAGE_ID": jmod._COREDUMP_MESSAGE_ID, "_UID": "0", "COREDUMP_UNIT": "y.service"}),
        ("kernel", {"_TRANSPORT": "kernel"}),
        ("x-dot-socket", {"_SYSTEMD_UNIT": "x.socket"}),
    ]
    entries = [
        {"__REALTIME_TIMESTAMP": str(1735725600000000 + i), **base, "MESSAGE": name, **f}
        for i, (name, f) in enumerate(rows)
    ]
    path = journal_file(entries)
    assert messages(read_both(files=[path], unit="x")) == ["own", "pid1", "coredump", "object"]
    assert messages(read_both(files=[path], unit="x.socket")) == ["x-dot-socket"]
    assert messages(read_both(files=[path], unit="x.*")) == ["own", "pid1", "coredump", "object", "x-dot-socket"]
    _assert_input_error(lambda: read("systemd", files=[path], unit="nothing-matches-*"), match="no unit")
    _assert_input_error(lambda: read("journalctl", files=[path], unit="nothing-matches-*"), match="no unit")
    # and exactly what journalctl -u prints itself
    out = subprocess.run(
        ["journalctl", f"--file={path}", "-u", "x", "-o", "cat", "--no-pager"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["own", "pid1", "coredump", "object"]


def test_no_matching_entries_is_empty_not_an_error(sglang_journal):
    # journalctl prints "-- No entries --" (short output) / nothing (json) with rc 0
    assert read_both(files=[sglang_journal], unit="absent-unit") == []
    assert read_both(files=[sglang_journal], since="2030-01-01") == []


def test_mangle_unit():
    assert mangle_unit("vllm") == "vllm.service"
    assert mangle_unit("vllm.service") == "vllm.service"
    assert mangle_unit("sglang@1") == "sglang@1.service"
    assert mangle_unit("foo.socket") == "foo.socket"
    assert mangle_unit("sglang-*") == "sglang-*"
    with pytest.raises(UsageError):
        mangle_unit("  ")


def test_lines(sglang_journal):
    assert read_both(files=[sglang_journal], lines=5) == read_both(files=[sglang_journal])[-5:]
    assert messages(read_both(files=[sglang_journal], unit="sglang-qwen", lines=3)) == messages(
        unit_lines(EXPECTED)[-3:]
    )
    assert len(read_both(files=[sglang_journal], lines=10_000)) == len(EXPECTED)
    assert read_both(files=[sglang_journal], lines=0) == []
    for bad in (-1, "5", 2.5, True):
        with pytest.raises(UsageError):
            iter_journal_entries(files=[sglang_journal], lines=bad)


def test_boot(sglang_journal):
    boot2 = [e for e in EXPECTED if e["_BOOT_ID"] == B.BOOT2]
    boot1 = [e for e in EXPECTED if e["_BOOT_ID"] == B.BOOT1]
    for spec in (True, "0", 0, "", B.BOOT2, "-0", B.BOOT1 + "+1", "2"):
        assert messages(read_both(files=[sglang_journal], boot=spec)) == messages(boot2), spec
    for spec in ("-1", -1, 1, "1", B.BOOT1, B.BOOT2 + "-1", B.BOOT1.upper()):
        assert messages(read_both(files=[sglang_journal], boot=spec)) == messages(boot1), spec
    # dashed UUID form
    dashed = f"{B.BOOT1[:8]}-{B.BOOT1[8:12]}-{B.BOOT1[12:16]}-{B.BOOT1[16:20]}-{B.BOOT1[20:]}"
    assert messages(read_both(files=[sglang_journal], boot=dashed)) == messages(boot1)
    # boot 1 of the unit: the OOM kill
    got = messages(read_both(files=[sglang_journal], unit="sglang-qwen", boot=-1))
    assert got == messages(unit_lines(boot1)) and f"{UNIT}: Failed with result 'oom-kill'." in got
    assert read_both(files=[sglang_journal], boot=None) == read_both(files=[sglang_journal], boot=False)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("spec", [-2, 3, "ffffffffffffffffffffffffffffffff", B.BOOT2 + "+1"])
def test_boot_not_in_journal(sglang_journal, backend, spec):
    with pytest.raises(InputError, match="not in the journal") as ei:
        read(backend, files=[sglang_journal], boot=spec)
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize("spec", ["yesterday", "0x12", "abc", "ffffffffffffffffffffffffffffffff1", "--1"])
def test_boot_bad_value(sglang_journal, spec):
    with pytest.raises(UsageError):
        iter_journal_entries(files=[sglang_journal], boot=spec)


@pytest.mark.parametrize(
    "since",
    [
        "2025-03-10 09:13:40",
        "2025-03-10T09:13:40",
        "2025-03-10T09:13:40Z",
        "2025-03-10T10:13:40+01:00",
        "2025-03-10 09:13:40 UTC",
        "Mon 2025-03-10 09:13:40 UTC",
        "2025-03-10 09:13:40.000000",
        "@1741598020",
    ],
)
def test_since_absolute(sglang_journal, since):
    cut = _ts("2025-03-10 09:13:40")
    expected = [e for e in EXPECTED if int(e["__REALTIME_TIMESTAMP"]) >= cut]
    assert messages(read_both(files=[sglang_journal], since=since)) == messages(expected)


def test_since_is_local_time(sglang_journal):
    _set_tz("EDT4")  # POSIX TZ: UTC-4, no tzdata needed
    cut = _ts("2025-03-10 09:13:40")
    expected = [e for e in EXPECTED if int(e["__REALTIME_TIMESTAMP"]) >= cut]
    assert messages(read_both(files=[sglang_journal], since="2025-03-10 05:13:40")) == messages(expected)
    assert messages(read_both(files=[sglang_journal], since="2025-03-10 09:13:40 UTC")) == messages(expected)


def test_since_and_lines_and_unit(sglang_journal):
    cut = _ts("2025-03-10 08:00:00")
    sel = [e for e in unit_lines(EXPECTED) if int(e["__REALTIME_TIMESTAMP"]) >= cut]
    got = read_both(files=[sglang_journal], unit="sglang-qwen", since="2025-03-10 08:00", lines=4)
    assert messages(got) == messages(sel[-4:])
    assert read_both(files=[sglang_journal], since="2025-03-10 08:00", lines=0) == []


def test_since_relative(journal_file):
    now = datetime.now(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)  # TZ=UTC: local midnight
    stamps = {
        "3 days ago": now - timedelta(days=3),
        "before yesterday": midnight - timedelta(hours=30),
        "yesterday": midnight - timedelta(hours=1),
        "90 min ago": now - timedelta(minutes=90),
        "5 min ago": now - timedelta(minutes=5),
        "1 s ago": now - timedelta(seconds=1),
    }
    rows = sorted(stamps.items(), key=lambda kv: kv[1])
    entries = [{"__REALTIME_TIMESTAMP": str(int(t.timestamp() * 1_000_000)), "MESSAGE": name} for name, t in rows]
    path = journal_file(entries)

    def since(value):
        return messages(read_both(files=[path], since=value))

    def after(t):
        return [name for name, ts in rows if ts >= t]

    assert since("-10min") == ["5 min ago", "1 s ago"]
    assert since("-2h") == after(now - timedelta(hours=2))
    assert since("1h 40min ago") == after(now - timedelta(minutes=100))
    assert since("-1d") == after(now - timedelta(days=1))
    assert since("today") == after(midnight)
    assert since("yesterday") == after(midnight - timedelta(days=1))
    assert since("-4d") == [name for name, _ in rows]
    assert since("+1h") == []


def test_parse_since_values():
    now = _ts("2025-01-01 10:00:00")
    day = 86_400_000_000
    cases = {
        "2025-01-01 10:00": now,
        "2025-01-01 10:00:00": now,
        "2025-01-01T10:00:00Z": now,
        "2025-01-01T12:00:00+02:00": now,
        "2025-01-01T05:00:00-0500": now,
        "Wed 2025-01-01 10:00:00 UTC": now,
        "2025-01-01": now - 10 * 3_600_000_000,
        "10:00": now,
        "now": now,
        "@1735725600": now,
        "2025-01-01 10:00:00.25": now + 250_000,
        "-10min": now - 600_000_000,
        "-2h": now - 7_200_000_000,
        "-1d": now - day,
        "today": now - 10 * 3_600_000_000,
        "yesterday": now - 10 * 3_600_000_000 - day,
        "-1h 30min": now - 5_400_000_000,
        "90s ago": now - 90_000_000,
        "+5m": now + 300_000_000,
        "-1w": now - 7 * day,
    }
    for text, want in cases.items():
        assert parse_since(text, now_us=now) == want, text
    for bad in ("", "soon", "2025-13-01", "-10 parsecs", "2025-01-01 25:00", "10:00 Not/AZone", "@x"):
        with pytest.raises(UsageError):
            parse_since(bad, now_us=now)


# ---------------------------------------------------------------------------------------------------------------
# content kept intact


def test_multiline_message_intact(sglang_journal):
    got = read_both(files=[sglang_journal], unit="sglang-qwen")
    for rank in ("TP0", "TP1"):
        want = B._traceback(rank)
        assert want.count("\n") > 40
        (e,) = [e for e in got if e["MESSAGE"].startswith(f"[2025-03-10 09:14:02 {rank}] Scheduler hit")]
        assert e["MESSAGE"] == want
        assert e["_TRANSPORT"] == "journal" and e["_PID"] == B.TP_PIDS_2[rank]


def test_control_characters_intact(sglang_journal):
    msgs = messages(read_both(files=[sglang_journal]))
    assert B.ESC_MESSAGE in msgs and "\x1b[33mWARNING\x1b[0m" in B.ESC_MESSAGE
    assert B.TQDM_MESSAGE in msgs and "\r" in B.TQDM_MESSAGE


def test_large_fields_intact(sglang_journal, journal_file):
    big = [m for m in messages(read_both(files=[sglang_journal])) if "server_args=" in m]
    assert len(big) == 2 and all(len(m.encode()) > 4096 for m in big)
    assert big == [e["MESSAGE"] for e in EXPECTED if "server_args=" in e["MESSAGE"]]
    # beyond sd-journal's default 64 KiB data threshold, compressed in the file
    huge = "".join(chr(65 + (i * 7) % 26) for i in range(300_000))
    path = journal_file([{"__REALTIME_TIMESTAMP": "1735725600000000", "MESSAGE": huge, "EXTRA": "y" * 9000}])
    (e,) = read_both(files=[path])
    assert e["MESSAGE"] == huge and e["EXTRA"] == "y" * 9000 and "_LOGDOCTOR_NOTE" not in e


def test_invalid_utf8_and_repeated_fields(journal_file):
    raw = (
        b"__REALTIME_TIMESTAMP=1735725600000000\n"
        b"MESSAGE\n" + (9).to_bytes(8, "little") + b"bad\xff\xfeutf8\n"
        b"FOO=one\nFOO=two\n\n"
    )
    path = journal_file(raw)
    (e,) = read_both(files=[path])
    assert e["MESSAGE"] == "bad\ufffd\ufffdutf8"
    assert e["FOO"] == "one"  # a repeated field keeps its first value (what short output shows)


def test_json_normaliser():
    norm = jmod._json_entry
    e = norm(
        {
            "MESSAGE": None,
            "__SEQNUM": "5",
            "__SEQNUM_ID": "ab",
            "X": [104, 105],
            "Y": ["a", "b"],
            "Z": [[27, 91], "q"],
            "__REALTIME_TIMESTAMP": "1",
        }
    )
    assert e == {
        "MESSAGE": "",
        "_LOGDOCTOR_NOTE": "field too large",
        "X": "hi",
        "Y": "a",
        "Z": "\x1b[",
        "__REALTIME_TIMESTAMP": "1",
    }
    assert norm({"__REALTIME_TIMESTAMP": "1"})["MESSAGE"] == ""


def test_several_files_and_directory(journal_file, tmp_path):
    a = journal_file(
        [{"__REALTIME_TIMESTAMP": str(1735725600000000 + 2 * i), "MESSAGE": f"a{i}"} for i in range(3)],
        name="d/a.journal",
    )
    journal_file(
        [{"__REALTIME_TIMESTAMP": str(1735725600000001 + 2 * i), "MESSAGE": f"b{i}"} for i in range(3)],
        name="d/b.journal",
    )
    (tmp_path / "d" / "notes.txt").write_text("not a journal")
    merged = ["a0", "b0", "a1", "b1", "a2", "b2"]  # several files are merged by time
    assert messages(read_both(files=[a, tmp_path / "d" / "b.journal"])) == merged
    assert messages(read_both(directory=tmp_path / "d")) == merged
    assert messages(read_both(directory=str(tmp_path / "d"), lines=2)) == ["a2", "b2"]
    # the /var/log/journal layout: files in a <machine-id> subfolder
    journal_file([{"__REALTIME_TIMESTAMP": "1735725600000000", "MESSAGE": "m"}], name=f"v/{'ab' * 16}/system.journal")
    notes: list[str] = []
    assert messages(read_both(directory=tmp_path / "v", notes=notes)) == ["m"] and notes == []


def test_directory_without_journal_files_gives_zero_entries_and_says_so(tmp_path):
    d = tmp_path / "nojournals"
    d.mkdir()
    (d / "x.bin").write_bytes(b"\0" * 100)
    (d / "not-a-machine-id").mkdir()  # sd-journal only looks into <machine-id> subfolders
    (d / "not-a-machine-id" / "a.journal").write_bytes(b"")
    for backend in BACKENDS:
        notes: list[str] = []
        assert read(backend, directory=d, notes=notes) == []
        assert notes == [f"no journal files (*.journal) in {d}: nothing to read"]


def test_stopping_early_is_clean(sglang_journal):
    for backend in BACKENDS:
        it = iter_journal_entries(files=[sglang_journal], prefer=backend)
        first = list(itertools.islice(it, 2))
        it.close()
        assert messages(first) == messages(EXPECTED[:2])


# ---------------------------------------------------------------------------------------------------------------
# errors: always InputError (one line), never another exception


def _assert_input_error(fn, *, match: str | None = None) -> str:
    with pytest.raises(InputError) as ei:
        fn()
    msg = str(ei.value)
    assert msg and "\n" not in msg
    if match:
        assert match in msg, msg
    return msg


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_missing_file(tmp_path, backend):
    _assert_input_error(lambda: read(backend, files=[tmp_path / "nope.journal"]), match="not found")


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_truncated_file(sglang_journal, tmp_path, backend):
    cut = tmp_path / "cut.journal"
    shutil.copyfile(sglang_journal, cut)
    subprocess.run(["truncate", "-s", "4K", str(cut)], check=True)
    _assert_input_error(lambda: read(backend, files=[cut]), match="truncated or corrupt")


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_random_bytes(tmp_path, backend):
    x = tmp_path / "x.journal"
    x.write_bytes(os.urandom(64 * 1024))
    _assert_input_error(lambda: read(backend, files=[x]), match="not a journal file")
    empty = tmp_path / "empty.journal"
    empty.write_bytes(b"")
    _assert_input_error(lambda: read(backend, files=[empty]), match="not a journal file")
    text = tmp_path / "journal.log"
    text.write_text("Jan 01 10:00:00 host vllm[1]: hello\n")
    _assert_input_error(lambda: read(backend, files=[text]), match="not a journal file")


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_names_the_bad_file_among_several(sglang_journal, tmp_path, backend):
    x = tmp_path / "x.journal"
    x.write_bytes(os.urandom(4096))
    _assert_input_error(lambda: read(backend, files=[sglang_journal, x]), match=str(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_directory_paths(sglang_journal, tmp_path, backend):
    _assert_input_error(lambda: read(backend, files=[tmp_path]), match="is a directory")
    _assert_input_error(lambda: read(backend, directory=tmp_path / "missing"), match="not found")
    _assert_input_error(lambda: read(backend, directory=sglang_journal), match="not a directory")
    fifo = tmp_path / "pipe.journal"
    os.mkfifo(fifo)  # must not block waiting for a writer
    _assert_input_error(lambda: read(backend, files=[fifo]), match="not a regular file")


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_unreadable_file(sglang_journal, tmp_path, backend, monkeypatch):
    locked = tmp_path / "locked.journal"
    shutil.copyfile(sglang_journal, locked)
    locked.chmod(0o000)
    try:
        if os.geteuid() != 0:
            _assert_input_error(lambda: read(backend, files=[locked]), match="permission denied")
            return
        setpriv = shutil.which("setpriv")
        drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable] if setpriv else None
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        # an unprivileged user must be able to import the checkout (a clone in a 0700 folder is not readable)
        if (
            drop is None
            or subprocess.run(
                drop + ["-c", "import logdoctor.input.sources.journal"], cwd="/", env=env, capture_output=True
            ).returncode
            != 0
        ):
            real_open = os.open  # root reads everything: simulate the refusal

            def deny(path, *a, **k):
                if os.fspath(path) == str(locked):
                    raise PermissionError(13, "Permission denied", str(path))
                return real_open(path, *a, **k)

            monkeypatch.setattr(jmod.os, "open", deny)
            _assert_input_error(lambda: read(backend, files=[locked]), match="permission denied")
            return
        code = (
            "import sys\nfrom logdoctor.core.errors import InputError\n"
            "from logdoctor.input.sources.journal import iter_journal_entries as it\n"
            "try:\n    list(it(files=[sys.argv[1]], prefer=sys.argv[2]))\nexcept InputError as e:\n"
            "    print('InputError:', e)\nelse:\n    print('no error')\n"
        )
        p = subprocess.run(drop + ["-c", code, str(locked), backend], capture_output=True, text=True, cwd="/", env=env)
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("InputError:") and "permission denied" in p.stdout, p.stdout + p.stderr
    finally:
        locked.chmod(0o600)


@pytest.mark.parametrize("backend", BACKENDS)
def test_live_journal(backend):
    """No journald here (CI, containers): InputError that says so and suggests piping journalctl."""
    if any(True for d in jmod.LIVE_JOURNAL_DIRS for _ in jmod._journal_paths(d)):
        entries = read(backend, lines=3)  # a machine with a journal: reading it must work
        assert len(entries) <= 3
        return
    msg = _assert_input_error(lambda: read(backend, unit="sglang-qwen", lines=200))
    assert "no systemd journal" in msg
    assert "journalctl -u sglang-qwen -n 1000 --no-pager | logdoctor explain" in msg


def _hide_binding(monkeypatch):
    """Make `from systemd import _reader` raise ImportError, as on a machine without systemd-python."""
    monkeypatch.setitem(sys.modules, "systemd", None)
    monkeypatch.setitem(sys.modules, "systemd._reader", None)


def test_binding_absent_falls_back_to_journalctl(sglang_journal, monkeypatch):
    want = read("systemd", files=[sglang_journal], unit="sglang-qwen")
    _hide_binding(monkeypatch)
    assert read("auto", files=[sglang_journal], unit="sglang-qwen") == want
    _assert_input_error(lambda: read("systemd", files=[sglang_journal]), match="systemd-python is not installed")


def test_journalctl_absent(sglang_journal, monkeypatch, tmp_path):
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    _assert_input_error(lambda: read("journalctl", files=[sglang_journal]), match="journalctl is not installed")
    assert read("auto", files=[sglang_journal])  # systemd-python does not need journalctl
    _hide_binding(monkeypatch)
    _assert_input_error(lambda: read("auto", files=[sglang_journal]), match="journalctl is not installed")


def test_usage_errors(sglang_journal, tmp_path):
    with pytest.raises(UsageError):
        iter_journal_entries(files=[sglang_journal], directory=tmp_path)
    with pytest.raises(UsageError):
        iter_journal_entries(files=[sglang_journal], prefer="pandas")
    with pytest.raises(UsageError):
        iter_journal_entries(files=[sglang_journal], since="the other day")


def test_import_is_light():
    code = (
        "import sys, logdoctor.input.sources.journal\n"
        "heavy = [m for m in ('systemd', 'systemd.journal', 'json', 'subprocess', 'uuid', 'logging') "
        "if m in sys.modules]\nprint(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"
