"""logfmt lines — `ts=2026-12-01T19:42:37Z level=error container=sglang msg="[2026-…] Init torch distributed begin."`
— as Grafana/Loki exports, Vector, Heroku and many log agents write them: the line the program wrote is the value of
`msg` (or `message`, `log`, `line`), double-quoted with backslash escapes (its own newlines escaped as `\\n`); the
other keys are the shipper's labels. A line is logfmt only when it is key=value pairs from end to end."""

from __future__ import annotations

from datetime import datetime

from logdoctor.core import rxcache
from logdoctor.input.formats import Outer

MSG_KEYS = ("msg", "message", "log", "line")
_TS_KEYS = ("ts", "time", "timestamp", "@timestamp")
_WRITER_KEYS = ("container", "container_name", "app", "service_name", "service", "job")
# a pair starts at the line's start or after a blank, and nothing in it gives back what it took (possessive): one
# pass over the line, also for a long run of key characters with no "=" (tests/test_regex_linear.py)
_PAIR = rxcache.compile(r'(?<![^ \t])([A-Za-z_@][\w.@\-]*+)=("(?:[^"\\]|\\.)*+"|[^\s"]*+)(?:[ \t]+|$)')
_ESCAPE = rxcache.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def parse_line(line: str) -> dict[str, str] | None:
    """The line's key=value pairs, values unquoted, or None when it is not logfmt from end to end, or has no
    message key and no time or level key (a log line that merely contains `x=1`, or SGLang's
    `server_args=ServerArgs(a='b', …)`, is never logfmt)."""
    if not line[:1].isalpha() and line[:1] not in "_@":
        return None
    out: dict[str, str] = {}
    pos, end = 0, len(line)
    while pos < end:
        m = _PAIR.match(line, pos)
        if m is None or m.end() == pos:
            return None
        v = m.group(2)
        out[m.group(1)] = _ESCAPE.sub(lambda e: _ESCAPES.get(e.group(1), e.group(0)), v[1:-1]) if v[:1] == '"' else v
        pos = m.end()
    if not any(k in out for k in MSG_KEYS) or not any(k in out for k in (*_TS_KEYS, "level", "lvl")):
        return None  # a shipper's line has a time or a level beside the message (a dump of k=v fields has neither)
    return out


def outer(fields: dict[str, str]) -> Outer:
    """The pairs → Outer: the message (several lines when it held escaped newlines), its time and its writer."""
    msg = next(fields[k] for k in MSG_KEYS if k in fields)
    ts = None
    raw = next((fields[k] for k in _TS_KEYS if fields.get(k)), None)
    if raw:
        try:
            ts = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            ts = None
    ident = next((fields[k] for k in _WRITER_KEYS if fields.get(k)), None)
    return Outer(fmt="logfmt", msg=msg.rstrip("\n"), ts=ts, ident=ident)
