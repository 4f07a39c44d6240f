"""Read systemd journal entries: journal files, a journal directory, or the live system journal.

Two backends give the same normalised entries (plain ``dict[str, str]``):

* systemd-python (the ``systemd._reader`` C extension, imported lazily: ~2 ms, against ~12-40 ms for
  ``systemd.journal``, which pulls in uuid/logging/traceback and converts every value to Python types we would
  only turn back into text);
* ``journalctl -o json --no-pager -a`` as a fallback when the binding is not installed, or with
  ``prefer="journalctl"``.

Normalised entry: every field as text (bytes decoded as UTF-8 with replacement), always with ``MESSAGE`` ("" when
absent; may be multi-line and may contain ESC/TAB/CR), ``__REALTIME_TIMESTAMP`` and ``__MONOTONIC_TIMESTAMP``
(integer microseconds as text), ``_BOOT_ID`` (32 hex digits; from the entry header when the field is missing) and
``__CURSOR``. Other fields (``_HOSTNAME``, ``SYSLOG_IDENTIFIER``, ``_COMM``, ``_PID``, ``PRIORITY``, ``_TRANSPORT``,
``_SYSTEMD_UNIT``, ``UNIT``, ...) appear when the entry has them. A field that occurs several times in one entry
keeps its first value (what ``journalctl -o short`` shows). ``__SEQNUM``/``__SEQNUM_ID`` (journalctl >= 254 only)
are dropped so that both backends agree. When journalctl nulls a field (only possible without ``-a``), the field
becomes "" and the entry gets ``_LOGDOCTOR_NOTE="field too large"``.

Filters copy journalctl: ``unit`` is ``-u`` (``X`` = ``X.service``; the unit's own lines, PID 1's lines about it
(``UNIT=`` + ``_PID=1``), its coredumps and lines from root daemons with ``OBJECT_SYSTEMD_UNIT=``; globs are expanded
against the units in the journal), ``boot`` is ``-b`` (True/0 = current boot, or the last boot in the files;
-1 the one before; 1 the first; a 32-hex boot id, optionally ``ID-1``), ``lines`` is ``-n`` (the last N entries,
oldest first; with ``since``: the last N entries at or after ``since``), ``since`` is ``--since`` (parsed here, see
:func:`parse_since`, and handed to journalctl as ``@epoch`` so both backends cut at the same microsecond).

All failures a user can cause (missing/unreadable/corrupt file, no journal on this machine, no journalctl for the
fallback, a boot that is not in the journal) raise :class:`logdoctor.core.errors.InputError` with a one-line message;
bad option values raise :class:`logdoctor.core.errors.UsageError`. File problems are detected when the function is
called; journalctl's own failures (fallback backend) surface when iteration starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from datetime import UTC

from logdoctor.core.errors import InputError, UsageError

__all__ = ["iter_journal_entries", "parse_since", "mangle_unit", "backend_available", "LIVE_JOURNAL_DIRS"]

Entry = dict[str, str]

#: where journald keeps the system journal (runtime first, as sd-journal does)
LIVE_JOURNAL_DIRS = ("/run/log/journal", "/var/log/journal")

_JOURNAL_MAGIC = b"LPKSHHRH"
_COREDUMP_MESSAGE_ID = "fc2e22bc6ee647b6b90729ab34a250b1"
_UNIT_SUFFIXES = (
    ".service",
    ".socket",
    ".target",
    ".device",
    ".mount",
    ".automount",
    ".swap",
    ".timer",
    ".path",
    ".slice",
    ".scope",
)
_DROP_JSON_KEYS = frozenset(("__SEQNUM", "__SEQNUM_ID"))
_NOTE_KEY = "_LOGDOCTOR_NOTE"
_TOO_LARGE = "field too large"


def _pipe_hint(unit: str | None) -> str:
    return f"journalctl -u {unit or 'UNIT'} -n 1000 --no-pager | logdoctor explain"


# ---------------------------------------------------------------------------------------------------------------
# public API


def iter_journal_entries(
    *,
    files: Sequence[str | os.PathLike[str]] = (),
    directory: str | os.PathLike[str] | None = None,
    unit: str | None = None,
    since: str | None = None,
    boot: str | int | bool | None = None,
    lines: int | None = None,
    prefer: str = "auto",
    notes: list[str] | None = None,
) -> Iterator[Entry]:
    """Return an iterator over normalised journal entries, oldest first (module docstring: shape, semantics).

    ``files`` -> ``journalctl --file`` (any file names), ``directory`` -> ``journalctl -D`` (only ``*.journal``
    files, and those in machine-id subfolders), neither -> the live system journal.
    ``prefer``: ``"auto"`` (systemd-python, else journalctl), ``"systemd"`` (alias ``"python"``) or
    ``"journalctl"``. ``notes``, when given, collects one-line remarks worth showing with ``--stats``/``-v``
    (e.g. a directory holding no journal files, files journalctl skipped as corrupt).
    """
    files = [os.fspath(f) for f in files]
    if files and directory is not None:
        raise UsageError("give journal files or a journal directory, not both")
    if lines is not None:
        if isinstance(lines, bool) or not isinstance(lines, int) or lines < 0:
            raise UsageError(f"-n/--lines must be a whole number >= 0, got {lines!r}")
    since_us = parse_since(since) if since is not None else None
    boot_spec = _parse_boot(boot)
    units = [mangle_unit(unit)] if unit is not None else []
    if prefer not in ("auto", "systemd", "python", "journalctl"):
        raise UsageError(f"unknown journal backend {prefer!r} (auto, systemd or journalctl)")

    if files:
        _check_files(files)
    elif directory is not None:
        directory = os.fspath(directory)
        if not _check_directory(directory) and notes is not None:
            notes.append(f"no journal files (*.journal) in {directory}: nothing to read")
    else:
        _check_live(unit)

    reader_mod = None
    if prefer != "journalctl":
        try:
            from systemd import _reader as reader_mod  # noqa: PLC0415  (lazy: only on the journal path)
        except ImportError:
            if prefer != "auto":
                raise InputError(
                    "systemd-python is not installed (pip install systemd-python, which needs "
                    "libsystemd-dev); or use the journalctl backend"
                ) from None
    if reader_mod is not None:
        return _iter_python(reader_mod, files, directory, units, since_us, boot_spec, lines, unit)
    return _iter_journalctl(files, directory, units, since_us, boot_spec, lines, unit, notes)


def backend_available() -> str | None:
    """Which backend ``prefer="auto"`` would use: "systemd", "journalctl" or None."""
    try:
        from systemd import _reader  # noqa: F401, PLC0415

        return "systemd"
    except ImportError:
        pass
    import shutil  # noqa: PLC0415

    return "journalctl" if shutil.which("journalctl") else None


def mangle_unit(name: str) -> str:
    """journalctl's ``-u`` name mangling: ``X`` -> ``X.service``; names with a unit suffix and globs stay."""
    name = name.strip()
    if not name:
        raise UsageError("--unit needs a unit name")
    if _is_glob(name) or name.endswith(_UNIT_SUFFIXES):
        return name
    return name + ".service"


# ---------------------------------------------------------------------------------------------------------------
# --since


_SPAN_UNITS: dict[str, float] = {}
for _names, _us in (
    (("us", "usec", "µs", "μs"), 1),
    (("ms", "msec"), 1_000),
    (("s", "sec", "secs", "second", "seconds"), 1_000_000),
    (("m", "min", "mins", "minute", "minutes"), 60_000_000),
    (("h", "hr", "hrs", "hour", "hours"), 3_600_000_000),
    (("d", "day", "days"), 86_400_000_000),
    (("w", "week", "weeks"), 604_800_000_000),
    (("M", "month", "months"), 2_629_800_000_000),  # 30.44 days, as systemd
    (("y", "year", "years"), 31_557_600_000_000),  # 365.25 days, as systemd
):
    for _n in _names:
        _SPAN_UNITS[_n] = _us
del _names, _us, _n

_SPAN_PART = r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-zµμ]*)"  # patterns compile on first use (re caches)
_WEEKDAY = r"(?i)^(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+"
_ABSOLUTE = (
    r"(?:(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})(?:[T ]+|$))?"
    r"(?:(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:[.,](?P<F>\d+))?)?)?"
    r"\s*(?P<tz>Z|[+-]\d{2}(?::?\d{2})?|[A-Za-z][A-Za-z0-9_+/-]*)?"
)


def parse_since(text: str, *, now_us: int | None = None) -> int:
    """Parse a ``--since`` value into microseconds since the epoch (what journalctl would use).

    Accepts ``YYYY-MM-DD [HH:MM[:SS[.ffffff]]]`` and ISO 8601 (``2025-01-01T10:00:00Z``, ``...+02:00``), with an
    optional leading weekday and trailing ``UTC``/offset/IANA zone (local time otherwise), ``HH:MM[:SS]`` (today),
    ``now``, ``today``, ``yesterday``, ``tomorrow``, ``@EPOCH``, and relative spans ``-10min``, ``-2h``, ``-1d``,
    ``-1h 30min``, ``+5m``, ``10min ago``.
    """
    raw = text
    s = str(text).strip()
    if not s:
        raise _bad_since(raw)
    if now_us is None:
        import time  # noqa: PLC0415

        now_us = time.time_ns() // 1000
    low = s.lower()
    if low == "now":
        return now_us
    if low in ("today", "yesterday", "tomorrow"):
        return _since_day(low, now_us)
    if s.startswith("@"):
        try:
            return round(float(s[1:]) * 1_000_000)
        except ValueError:
            raise _bad_since(raw) from None
    rel = _since_relative(s, low, now_us, raw)
    if rel is not None:
        return rel
    return _since_absolute(s, now_us, raw)


def _since_day(word: str, now_us: int) -> int:
    """``today`` / ``yesterday`` / ``tomorrow``: local midnight of that day."""
    from datetime import datetime, timedelta  # noqa: PLC0415  (already imported by almost anything)

    base = datetime.fromtimestamp(now_us / 1e6).replace(hour=0, minute=0, second=0, microsecond=0)
    base += timedelta(days={"today": 0, "yesterday": -1, "tomorrow": 1}[word])
    return round(base.timestamp() * 1_000_000)


def _since_relative(s: str, low: str, now_us: int, raw: str) -> int | None:
    """``-SPAN``, ``+SPAN``, ``SPAN ago``, ``SPAN left`` from now; None when ``s`` is not relative. A relative
    value whose span does not parse is an error, not an absolute time."""
    sign = 0
    span = s
    if s[:1] in "+-":
        sign, span = (1 if s[0] == "+" else -1), s[1:]
    elif low.endswith(" ago"):
        sign, span = -1, s[:-4]
    elif low.endswith(" left"):
        sign, span = 1, s[:-5]
    if not sign:
        return None
    delta = _parse_span(span)
    if delta is None:
        raise _bad_since(raw)
    return now_us + sign * delta


def _since_absolute(s: str, now_us: int, raw: str) -> int:
    """``[Weekday] [YYYY-MM-DD][ HH:MM[:SS[.f]]] [zone]``; a time alone is today's (in its zone)."""
    from datetime import datetime  # noqa: PLC0415

    s = re.sub(_WEEKDAY, "", s)
    m = re.fullmatch(_ABSOLUTE, s)
    if not m or (m["y"] is None and m["H"] is None):
        raise _bad_since(raw)
    tz = _since_zone(m["tz"], raw) if m["tz"] else None
    if m["y"] is not None:
        y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
    else:
        today = datetime.fromtimestamp(now_us / 1e6, tz)
        y, mo, d = today.year, today.month, today.day
    frac = (m["F"] or "")[:6].ljust(6, "0")
    try:
        dt = datetime(y, mo, d, int(m["H"] or 0), int(m["M"] or 0), int(m["S"] or 0), int(frac), tzinfo=tz)
    except ValueError:
        raise _bad_since(raw) from None
    return _exact_us(dt)


def _since_zone(tzname: str, raw: str):
    """The zone of an absolute ``--since``: Z/UTC/GMT, a ``+HH[:MM]`` offset, or an IANA name."""
    from datetime import timedelta, timezone  # noqa: PLC0415

    up = tzname.upper()
    if up in ("Z", "UTC", "GMT"):
        return UTC
    if tzname[0] in "+-":
        digits = tzname[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + (int(digits[2:]) if len(digits) > 2 else 0)
        return timezone((1 if tzname[0] == "+" else -1) * timedelta(minutes=minutes))
    try:
        from zoneinfo import ZoneInfo  # noqa: PLC0415  (rare: a named zone)

        return ZoneInfo(tzname)
    except Exception:  # ZoneInfoNotFoundError, ValueError on odd names
        raise _bad_since(raw) from None


def _exact_us(dt) -> int:  # timestamp() goes through a float; keep the microseconds exact
    return round(dt.replace(microsecond=0).timestamp()) * 1_000_000 + dt.microsecond


def _parse_span(span: str) -> int | None:
    span = span.strip()
    if not span:
        return None
    total = 0.0
    pos = 0
    span_part = re.compile(_SPAN_PART)
    while pos < len(span):
        m = span_part.match(span, pos)
        if not m or m.end() == pos:
            return None
        unit = m[2] or "s"
        mult = _SPAN_UNITS.get(unit)
        if mult is None and unit != "M":
            mult = _SPAN_UNITS.get(unit.lower())
        if mult is None:
            return None
        total += float(m[1]) * mult
        pos = m.end()
        while pos < len(span) and span[pos] == " ":
            pos += 1
    return round(total)


def _bad_since(raw: object) -> UsageError:
    return UsageError(
        f"cannot read --since {raw!r}: use 'YYYY-MM-DD HH:MM[:SS]', ISO 8601, '-10min', '-2h', "
        "'-1d', 'today' or 'yesterday'"
    )


# ---------------------------------------------------------------------------------------------------------------
# --boot

_BOOT_RE = r"(?P<id>[0-9a-f]{32})(?P<off>[+-]\d+)?|(?P<off2>[+-]?\d+)"


def _parse_boot(boot: str | int | bool | None) -> tuple[str | None, int] | None:
    """None (no boot filter) or (boot id or None, offset); offset <= 0 counts back from the last boot,
    offset > 0 counts from the first (1 = first); with an id the offset is relative to that boot."""
    if boot is None or boot is False:
        return None
    if boot is True:
        return (None, 0)
    if isinstance(boot, int):
        return (None, boot)
    s = str(boot).strip().lower()
    if s in ("", "current", "this"):
        return (None, 0)
    s_id = s.replace("-", "") if re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", s) else s
    m = re.fullmatch(_BOOT_RE, s_id)
    if not m:
        raise UsageError(f"cannot read --boot {boot!r}: use 0 (current/last), -1, -2, ... or a 32-hex boot id")
    return (m["id"], int(m["off"] or m["off2"] or 0))


def _boot_arg(spec: tuple[str | None, int]) -> str:
    bid, off = spec
    if bid is None:
        return str(off)
    return bid + (f"{off:+d}" if off else "")


def _describe_boot(spec: tuple[str | None, int]) -> str:
    bid, off = spec
    return bid + (f"{off:+d}" if off else "") if bid else f"{off:+d}" if off else "0"


def _current_boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip().replace("-", "")
    except OSError as e:
        raise InputError(f"cannot tell the current boot id ({e.strerror}); give a boot id or offset") from None


def _pick_boot(boots: list[str], spec: tuple[str | None, int]) -> str:
    """journalctl's rule for choosing a boot from the time-ordered list of boots in the journal."""
    bid, off = spec
    if bid is not None:
        if bid not in boots:
            raise _no_boot(spec, boots)
        idx = boots.index(bid) + off
    elif off > 0:
        idx = off - 1
    else:
        idx = len(boots) - 1 + off
    if not 0 <= idx < len(boots):
        raise _no_boot(spec, boots)
    return boots[idx]


def _no_boot(spec: tuple[str | None, int], boots: list[str]) -> InputError:
    return InputError(
        f"boot {_describe_boot(spec)} is not in the journal (it holds {len(boots)} boot"
        f"{'' if len(boots) == 1 else 's'}: 0 is the last, -1 the one before)"
    )


# ---------------------------------------------------------------------------------------------------------------
# input checks (shared by both backends, so they fail with the same messages)


def _check_files(files: list[str]) -> None:
    import stat  # noqa: PLC0415

    for path in files:
        try:
            mode = os.stat(path).st_mode
            if stat.S_ISDIR(mode):
                raise InputError(f"{path} is a directory, not a journal file (use --journal-dir)")
            if not stat.S_ISREG(mode):  # a pipe or device: sd-journal needs a file it can map
                raise InputError(
                    f"{path} is not a regular file; journal files are read from disk (for a text "
                    "log on a pipe, pass it as SOURCE instead)"
                )
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        except FileNotFoundError:
            raise InputError(f"journal file not found: {path}") from None
        except PermissionError:
            raise InputError(
                f"cannot read journal file {path}: permission denied (run as root or as a member "
                "of the systemd-journal group)"
            ) from None
        except OSError as e:
            raise InputError(f"cannot open journal file {path}: {e.strerror}") from None


def _check_directory(directory: str) -> bool:
    """Raise for a missing/unreadable directory; return whether it holds any journal file."""
    try:
        found = _has_journal_files(directory)
    except FileNotFoundError:
        raise InputError(f"journal directory not found: {directory}") from None
    except NotADirectoryError:
        raise InputError(f"{directory} is not a directory (use --journal-file for a single file)") from None
    except PermissionError:
        raise InputError(f"cannot read journal directory {directory}: permission denied") from None
    except OSError as e:
        raise InputError(f"cannot read journal directory {directory}: {e.strerror}") from None
    return found


def _has_journal_files(directory: str) -> bool:
    """Like sd_journal_open_directory: *.journal (and *.journal~) here and in machine-id style subfolders.
    Raises OSError when the directory itself cannot be listed."""
    os.scandir(directory).close()
    return any(True for _ in _journal_paths(directory))


def _check_live(unit: str | None) -> None:
    found = readable = False
    for d in LIVE_JOURNAL_DIRS:
        for path in _journal_paths(d):
            found = True
            if os.access(path, os.R_OK):
                readable = True
                break
        if readable:
            break
    if not found:
        raise InputError(
            "no systemd journal on this machine (journald is not running or keeps no files "
            f"under {' or '.join(LIVE_JOURNAL_DIRS)}); on the host, run: {_pipe_hint(unit)}"
        )
    if not readable:
        raise InputError(
            "cannot read the system journal: permission denied (run as root or as a member of the "
            f"systemd-journal group), or pipe it: {_pipe_hint(unit)}"
        )


def _is_machine_dir(name: str) -> bool:
    return re.fullmatch(r"[0-9a-f]{32}(?:\.[^/]+)?", name) is not None


def _journal_paths(directory: str) -> Iterator[str]:
    """*.journal / *.journal~ files in a journal directory and its machine-id subfolders."""
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError:
        return
    for e in entries:
        if e.name.endswith((".journal", ".journal~")):
            yield e.path
        elif _is_machine_dir(e.name) and e.is_dir():  # <machine-id>[.<namespace>], as sd-journal
            try:
                with os.scandir(e.path) as sub:
                    for f in sub:
                        if f.name.endswith((".journal", ".journal~")):
                            yield f.path
            except OSError:
                continue


def _bad_files_error(files: list[str], reason: str, still_bad) -> InputError:
    """Name the file that made opening fail (only on the error path: re-probes the files one by one)."""
    bad = files[0]
    if len(files) > 1:
        for path in files:
            if still_bad(path):
                bad = path
                break
    try:
        with open(bad, "rb") as f:
            head = f.read(8)
    except OSError:
        head = b""
    if head != _JOURNAL_MAGIC:
        what = "empty file" if not head else "wrong file signature"
        return InputError(f"{bad} is not a journal file ({what}); for a text log, pass it as SOURCE instead")
    return InputError(f"journal file {bad} is truncated or corrupt ({reason})")


# ---------------------------------------------------------------------------------------------------------------
# backend 1: systemd-python


def _iter_python(rmod, files, directory, units, since_us, boot_spec, lines, unit) -> Iterator[Entry]:
    try:
        if files:
            r = rmod._Reader(0, None, files)
        elif directory is not None:
            r = rmod._Reader(0, directory, None)
        else:
            r = rmod._Reader(rmod.LOCAL_ONLY)
    except OSError as e:
        if files:

            def still_bad(path: str) -> bool:
                try:
                    rmod._Reader(0, None, [path]).close()
                    return False
                except OSError:
                    return True

            raise _bad_files_error(files, e.strerror or str(e), still_bad) from None
        where = directory or "the system journal"
        raise InputError(f"cannot open {where}: {e.strerror or e}") from None
    if not files and directory is None and not (r.has_persistent_files() or r.has_runtime_files()):
        r.close()  # _check_live saw files, but sd-journal could open none of them
        raise InputError(f"cannot read the system journal (no journal file could be opened): {_pipe_hint(unit)}")
    try:
        r.data_threshold = 0  # no size limit: sd-journal may otherwise cut compressed fields at the threshold
        if boot_spec is not None:
            if boot_spec == (None, 0) and not files and directory is None:
                boot_id = _current_boot_id()
            else:
                boot_id = _pick_boot(_python_boots(r), boot_spec)
            r.add_match(f"_BOOT_ID={boot_id}")
            r.add_conjunction()
        if units:
            names = _expand_units(units, lambda field: _python_unique(r, field))
            if not names:
                raise _no_unit(units)
            _add_unit_matches(r, names)
    except OSError as e:
        r.close()
        raise InputError(f"error reading the journal: {e.strerror or e}") from None
    except BaseException:
        r.close()
        raise
    return _python_walk(r, since_us, lines)


def _python_walk(r, since_us: int | None, lines: int | None) -> Iterator[Entry]:
    norm = _python_entry
    try:
        if lines == 0:
            return
        if since_us is not None:
            r.seek_realtime(since_us)
            if lines is None:
                while r._next(1):
                    yield norm(r)
            else:
                from collections import deque  # noqa: PLC0415

                last: deque[Entry] = deque(maxlen=lines)
                while r._next(1):
                    last.append(norm(r))
                yield from last
        elif lines is not None:
            r.seek_tail()
            if r._previous(lines):  # like journalctl: from the tail, step back N entries, then read forward
                yield norm(r)
                while r._next(1):
                    yield norm(r)
        else:
            r.seek_head()  # boot discovery may have moved the read position
            while r._next(1):
                yield norm(r)
    except OSError as e:
        raise InputError(f"error reading the journal: {e.strerror or e}") from None
    finally:
        r.close()


def _python_entry(r) -> Entry:
    mono = r._get_monotonic()
    out = {
        "__CURSOR": r._get_cursor(),
        "__REALTIME_TIMESTAMP": str(r._get_realtime()),
        "__MONOTONIC_TIMESTAMP": str(mono[0]),
    }
    for k, v in r._get_all().items():
        if type(v) is list:
            v = v[0]
        out[k] = v.decode("utf-8", "replace")
    if "_BOOT_ID" not in out:
        out["_BOOT_ID"] = mono[1].hex()
    if "MESSAGE" not in out:
        out["MESSAGE"] = ""
    return out


def _python_unique(r, field: str) -> set[str]:
    return {v.decode("utf-8", "replace") for v in r.query_unique(field)}


def _python_boots(r) -> list[str]:
    """Boot ids in the journal, ordered by their first entry (journalctl --list-boots order)."""
    firsts = []
    for b in r.query_unique("_BOOT_ID"):
        r.flush_matches()
        r.add_match(b"_BOOT_ID=" + b)
        r.seek_head()
        if r._next(1):
            firsts.append((r._get_realtime(), b.decode("ascii", "replace")))
    r.flush_matches()
    return [b for _, b in sorted(firsts)]


def _expand_units(units: list[str], unique) -> list[str]:
    """journalctl expands unit globs against the unit names the journal mentions."""
    names: list[str] = []
    patterns = [u for u in units if _is_glob(u)]
    names.extend(u for u in units if not _is_glob(u))
    if patterns:
        from fnmatch import fnmatchcase  # noqa: PLC0415

        seen: set[str] = set()
        for field in ("_SYSTEMD_UNIT", "COREDUMP_UNIT", "UNIT", "OBJECT_SYSTEMD_UNIT"):
            seen |= unique(field)
        names.extend(sorted(n for n in seen if any(fnmatchcase(n, p) for p in patterns)))
    return names


def _add_unit_matches(r, names: list[str]) -> None:
    """journalctl's add_matches_for_unit(), for system units."""
    first = True
    for u in names:
        for group in (
            (f"_SYSTEMD_UNIT={u}",),
            (f"MESSAGE_ID={_COREDUMP_MESSAGE_ID}", "_UID=0", f"COREDUMP_UNIT={u}"),
            ("_PID=1", f"UNIT={u}"),
            ("_UID=0", f"OBJECT_SYSTEMD_UNIT={u}"),
        ):
            if not first:
                r.add_disjunction()
            first = False
            for term in group:
                r.add_match(term)
    r.add_conjunction()


def _no_unit(units: list[str]) -> InputError:
    # journalctl: "Failed to add filter for units: No data available"
    return InputError(f"no unit in the journal matches {' '.join(units)!r}")


def _is_glob(name: str) -> bool:
    return any(c in name for c in "*?[")


# ---------------------------------------------------------------------------------------------------------------
# backend 2: journalctl -o json


def _iter_journalctl(files, directory, units, since_us, boot_spec, lines, unit, notes) -> Iterator[Entry]:
    import shutil  # noqa: PLC0415

    exe = shutil.which("journalctl")
    if exe is None:
        raise InputError(
            "journalctl is not installed (needed to read the journal without systemd-python); on a "
            f"machine with systemd, run: {_pipe_hint(unit)}"
        )
    args = [exe, "--output=json", "--no-pager", "--all"]
    if files:
        args += ["--file=" + _glob_escape(f) for f in files]
    elif directory is not None:
        args.append("--directory=" + directory)
    if boot_spec is not None:
        args.append("--boot=" + _boot_arg(boot_spec))
    args += ["--unit=" + u for u in units]
    if since_us is not None:
        args.append(f"--since=@{since_us // 1_000_000}.{since_us % 1_000_000:06d}")
    elif lines is not None:
        args.append(f"--lines={lines}")
    stream = _journalctl_stream(args, files, boot_spec, units, notes)
    if since_us is not None and lines is not None:
        return _keep_last(stream, lines)
    return stream


def _keep_last(stream: Iterator[Entry], n: int) -> Iterator[Entry]:
    from collections import deque  # noqa: PLC0415

    if n == 0:
        for _ in stream:
            pass
        return
    yield from deque(stream, maxlen=n)


def _glob_escape(path: str) -> str:
    # journalctl --file= expands globs; escape so that a literal path with [*? is matched as itself
    return re.sub(r"([*?\[\\])", r"\\\1", path)


def _journalctl_stream(
    args: list[str],
    files: list[str],
    boot_spec: tuple[str | None, int] | None,
    units: list[str],
    notes: list[str] | None,
) -> Iterator[Entry]:
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    env = dict(os.environ)
    env.pop("SYSTEMD_LOG_LEVEL", None)  # debug level would add "-- Journal begins ..." and chatter
    env["SYSTEMD_COLORS"] = "0"
    err_fd = _scratch_fd()
    try:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err_fd, env=env)
    except OSError as e:
        os.close(err_fd)
        raise InputError(f"cannot run journalctl: {e.strerror or e}") from None
    loads = json.loads
    norm = _json_entry
    rc = None
    try:
        for raw in proc.stdout:
            if raw[:1] != b"{":  # "-- No entries --", "-- Journal begins ... --"
                continue
            yield norm(loads(raw))
        rc = proc.wait()
    finally:
        if rc is None and proc.poll() is None:  # the consumer stopped early
            proc.kill()
            proc.wait()
        proc.stdout.close()
        os.lseek(err_fd, 0, os.SEEK_SET)
        with os.fdopen(err_fd, "rb") as f:
            err = f.read(65536).decode("utf-8", "replace")
    msgs = [ln.strip() for ln in err.splitlines() if ln.strip()]
    if rc not in (0, None):
        raise _journalctl_error(msgs, files, boot_spec, units)
    if notes is not None:
        notes.extend(m for m in msgs if not m.startswith(("Hint:", "No journal files were found")))


def _scratch_fd() -> int:
    try:
        return os.memfd_create("journalctl-stderr", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        import tempfile  # noqa: PLC0415

        return os.dup(tempfile.TemporaryFile().fileno())


def _journalctl_error(
    msgs: list[str], files: list[str], boot_spec: tuple[str | None, int] | None, units: list[str]
) -> InputError:
    first = msgs[0] if msgs else "journalctl failed with no message"
    if units and first.startswith("Failed to add filter for units"):
        return _no_unit(units)
    if boot_spec is not None and "specified boot" in first and "not available" in first:
        return InputError(
            f"boot {_describe_boot(boot_spec)} is not in the journal (journalctl --list-boots "
            "shows them: 0 is the last, -1 the one before)"
        )
    if "Permission denied" in first:
        return InputError(f"cannot read the journal: permission denied ({first})")
    if files and first.startswith("Failed to open files"):
        reason = first.split(":", 1)[-1].strip()

        def still_bad(path: str) -> bool:
            import shutil  # noqa: PLC0415
            import subprocess  # noqa: PLC0415

            p = subprocess.run(
                [
                    shutil.which("journalctl") or "journalctl",
                    "--file=" + _glob_escape(path),
                    "--lines=0",
                    "--no-pager",
                    "--quiet",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            return p.returncode != 0

        return _bad_files_error(files, reason, still_bad)
    return InputError(f"journalctl failed: {first}")


def _json_entry(obj: dict) -> Entry:
    out: Entry = {}
    for k, v in obj.items():
        t = type(v)
        if t is str:
            out[k] = v
        elif v is None:
            out[k] = ""
            out[_NOTE_KEY] = _TOO_LARGE
        elif t is list:
            if not v:
                out[k] = ""
            elif type(v[0]) is int:  # one binary value: an array of byte values
                out[k] = bytes(v).decode("utf-8", "replace")
            else:  # a repeated field: keep the first value, like short output
                first = v[0]
                if first is None:
                    out[k] = ""
                    out[_NOTE_KEY] = _TOO_LARGE
                else:
                    out[k] = first if type(first) is str else bytes(first).decode("utf-8", "replace")
        else:
            out[k] = str(v)
    for k in _DROP_JSON_KEYS:
        out.pop(k, None)
    if "MESSAGE" not in out:
        out["MESSAGE"] = ""
    return out
