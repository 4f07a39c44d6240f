"""journalctl text output: short, short-iso, short-precise, short-iso-precise, short-full, short-monotonic,
short-unix, with-unit — plus journalctl's own "-- ... --" lines and indented continuation lines.

All short* variants share "<time> <host> <ident>[<pid>]: <message>"; only the time field differs, so one regex
per time form feeds a shared tail. The short form has no year: the caller's `year` is assumed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from logdoctor.core import rxcache
from logdoctor.core.records import KERNEL, SYSTEMD
from logdoctor.input.formats import Outer

_MONTHS = {
    m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)
}

_TAIL = r" (?P<host>\S+) (?P<ident>[^\s\[\]]+?)(?:\[(?P<pid>\d+)\])?:(?: (?P<msg>.*)|$)"
_FORMS = (
    (
        "journal-short-iso",
        rxcache.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?P<frac>\.\d{1,6})?(?P<tz>[+-]\d\d:?\d\d))" + _TAIL),
    ),
    (
        "journal-short",
        rxcache.compile(r"^(?P<mon>[A-Z][a-z]{2}) (?P<day>[ \d]\d) (?P<hms>\d\d:\d\d:\d\d)(?P<frac>\.\d+)?" + _TAIL),
    ),
    (
        "journal-short-full",
        rxcache.compile(
            r"^(?:[A-Z][a-z]{2} )(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?P<frac>\.\d+)? (?P<zone>[A-Za-z][\w/+-]*)"
            + _TAIL
        ),
    ),
    ("journal-short-monotonic", rxcache.compile(r"^\[\s*(?P<mono>\d+\.\d+)\]" + _TAIL)),
    ("journal-short-unix", rxcache.compile(r"^(?P<unix>\d{9,11}\.\d+)" + _TAIL)),
)
_META = rxcache.compile(r"^-- (?:.+) --$|^-- No entries --$|^-- (?:Boot|Reboot|Logs begin|Journal begins)\b.*--\s*$")


def parse_meta(line: str) -> Outer | None:
    if line.startswith("-- ") and _META.match(line.rstrip()):
        boot = re.match(r"^-- Boot ([0-9a-f]{32}) --", line)
        extra = {"_BOOT_ID": boot.group(1)} if boot else {}
        return Outer(fmt="journal-meta", msg=line.rstrip(), extra=extra)
    return None


def parse(line: str, year: int) -> Outer | None:
    c = line[:1]
    if not c or c.isspace():
        return None
    if c.isdigit():
        forms = (_FORMS[0], _FORMS[4])
    elif c == "[":
        forms = (_FORMS[3],)
    elif c.isupper():
        forms = (_FORMS[1], _FORMS[2])
    else:
        return None
    for fmt, rx in forms:
        m = rx.match(line)
        if m:
            return _outer(fmt, m, year)
    return None


def _outer(fmt: str, m: re.Match, year: int) -> Outer:
    gd = m.groupdict()
    line = m.string
    ts = None
    frac = gd.get("frac") or ""
    try:
        if fmt == "journal-short":
            ts = datetime(year, _MONTHS[gd["mon"]], int(gd["day"]), *map(int, gd["hms"].split(":")))
        elif fmt == "journal-short-iso":
            text = gd["ts"]
            tz = gd.get("tz")
            base = text[:19]
            ts = datetime.fromisoformat(base)
            if tz:
                ts = ts.replace(tzinfo=_tz(tz))
        elif fmt == "journal-short-full":
            ts = datetime.fromisoformat(f"{gd['date']} {gd['hms']}")
            if gd["zone"] in ("UTC", "GMT"):
                ts = ts.replace(tzinfo=UTC)
        elif fmt == "journal-short-unix":
            ts = datetime.fromtimestamp(float(gd["unix"]), tz=UTC)
            frac = ""
    except (ValueError, KeyError, OverflowError):
        ts = None
    if ts is not None and frac:
        ts = ts + timedelta(microseconds=int((frac[1:] + "000000")[:6]))
    if frac and fmt == "journal-short":
        fmt = "journal-short-precise"
    elif frac and fmt == "journal-short-iso":
        fmt = "journal-short-iso-precise"
    ident = gd["ident"]
    unit = None
    if ident.endswith((".service", ".scope", ".socket", ".timer")):
        fmt = "journal-with-unit" if fmt == "journal-short-full" else fmt
        unit = ident
    pid = int(gd["pid"]) if gd.get("pid") else None
    transport = None
    if ident == "kernel":
        transport = KERNEL
    elif ident in ("systemd", "init", "init.scope") and pid in (1, None):
        transport = SYSTEMD
    extra = {"MONOTONIC": gd["mono"]} if gd.get("mono") else {}
    msg = gd["msg"] or ""
    return Outer(
        fmt=fmt,
        msg=msg,
        ts=ts,
        host=gd["host"],
        ident=ident,
        pid=pid,
        unit=unit,
        transport=transport,
        msg_col=m.start("msg") if gd["msg"] is not None else len(line),
        extra=extra,
    )


def _tz(text: str) -> timezone:
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


def continuation_text(line: str, col: int) -> str | None:
    """An indented continuation line of a multi-line message in short output, or None if it is not one.

    journalctl indents continuations to the message column; the line's own leading spaces follow that indent.
    """
    if not line[:1].isspace():
        return None
    if col and len(line) >= col and not line[:col].strip():
        return line[col:]
    return line.lstrip(" ")
