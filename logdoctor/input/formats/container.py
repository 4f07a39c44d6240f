"""Container log prefixes: docker logs -t / kubectl logs --timestamps (RFC 3339 nano timestamp + space), the CRI
log files the kubelet keeps under /var/log/pods (timestamp, stream, F/P tag: "…Z stderr F msg"), and
docker-compose's "service-1  | " prefix (with or without a timestamp after it), and pm2's "0|app  | "."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from logdoctor.core import rxcache
from logdoctor.input.formats import Outer

_TS = rxcache.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?P<frac>\.\d{1,9})?(?P<tz>Z|[+-]\d\d:\d\d) "
    r"(?:(?:stdout|stderr) [FP] )?(?P<msg>.*)$"
)
_GENERIC = rxcache.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?P<frac>[.,]\d{1,9})?(?P<tz>Z|[+-]\d\d:?\d\d)? (?P<msg>.*)$"
)
_TGI_NATIVE = rxcache.compile(r"^ ?(?:TRACE|DEBUG|INFO|WARN|ERROR) [a-z_][\w:\-]*(?:\{[^}]*\})?: ")
# "name  | msg": docker compose ("svc-1  | "), and process managers of the same shape, e.g. pm2 ("0|app  | ",
# its own lines "PM2        | "; the pm2 process id before the name is part of the writer's label) and supervisord's
# supervisor-stdout event listener, which names the stream too ("sglang stderr | "; the stream is not the writer)
_COMPOSE = rxcache.compile(r"^(?P<name>(?:\d{1,4}\|)?[A-Za-z0-9][\w.-]*?)(?: (?:stdout|stderr))?\s+\| ?(?P<msg>.*)$")


def parse_timestamped(line: str) -> Outer | None:
    if not line[:1].isdigit():
        return None
    m = _TS.match(line)
    if not m or _TGI_NATIVE.match(m.group("msg")):
        return None  # TGI's own "2024-..Z  INFO target: msg" lines keep their prefix for the engine splitter
    return Outer(fmt="docker-timestamps", msg=m.group("msg"), ts=iso_ts(m), msg_col=m.start("msg"))


def parse_generic_timestamp(line: str) -> Outer | None:
    """A log shipper's "2025-03-14 09:00:00 <line>" prefix. lmdeploy's own "ts - name - LEVEL -" lines and SGLang's
    bracketed prefix are engine prefixes, left alone."""
    if not line[:1].isdigit():
        return None
    m = _GENERIC.match(line)
    if not m or m.group("msg").startswith("- ") or _TGI_NATIVE.match(m.group("msg")):
        return None
    try:
        ts = datetime.fromisoformat(m.group("ts").replace(" ", "T"))
    except ValueError:
        ts = None
    return Outer(fmt="timestamped", msg=m.group("msg"), ts=ts, msg_col=m.start("msg"))


def parse_compose(line: str) -> Outer | None:
    if "|" not in line[:64]:
        return None
    m = _COMPOSE.match(line)
    if not m:
        return None
    inner = m.group("msg")
    out = Outer(fmt="docker-compose", msg=inner, ident=m.group("name"), msg_col=m.start("msg"))
    t = _TS.match(inner)
    if t:
        out.ts = iso_ts(t)
        out.msg = t.group("msg")
        out.msg_col += t.start("msg")
    return out


def iso_ts(m: re.Match) -> datetime | None:
    """An ISO timestamp match (groups ts, frac, tz) → UTC datetime; shared with formats/wrappers.py."""
    try:
        ts = datetime.fromisoformat(m.group("ts")).replace(tzinfo=UTC)
    except ValueError:
        return None
    frac = m.group("frac")
    if frac:
        ts += timedelta(microseconds=int((frac[1:] + "000000")[:6]))
    tz = m.group("tz")
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        ts -= sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6]))
    return ts
