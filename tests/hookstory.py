"""Test helper for the deploy-hook tests: short-format journal text (as journalctl -o short prints it) → journal
export entries with the fields journald would have set, so the fixtures can be replayed as real .journal files.

    entries_from_short(text, unit=..., host=None, shift_to=None) -> list[dict]

systemd's own lines get _PID=1 + UNIT=, kernel lines _TRANSPORT=kernel, everything else the service's fields
(_SYSTEMD_UNIT=, _PID=, _COMM=). host= renames the host; shift_to= (unix seconds) moves the first line to that time
and keeps the spacing of the rest.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_LINE = re.compile(
    r"^(?P<ts>\w{3} [ \d]\d \d\d:\d\d:\d\d) (?P<host>\S+) (?P<ident>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: ?"
    r"(?P<msg>.*)$"
)
BOOT = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def entries_from_short(
    text: str, *, unit: str, host: str | None = None, shift_to: float | None = None, year: int = 2026
) -> list[dict]:
    out: list[dict] = []
    first_us = None
    for i, line in enumerate(text.splitlines()):
        m = _LINE.match(line)
        if not m:
            continue
        ts = datetime.strptime(f"{year} {m['ts']}", "%Y %b %d %H:%M:%S").replace(tzinfo=UTC)
        us = int(ts.timestamp()) * 1_000_000 + i  # + i keeps lines of one second in order
        if first_us is None:
            first_us = us
        if shift_to is not None:
            us = int(shift_to * 1_000_000) + (us - first_us)
        e = {
            "__REALTIME_TIMESTAMP": str(us),
            "__MONOTONIC_TIMESTAMP": str(us - (first_us or us) + 1_000_000),
            "_BOOT_ID": BOOT,
            "_HOSTNAME": host or m["host"],
            "MESSAGE": m["msg"],
        }
        ident = m["ident"]
        if ident == "systemd" and m["pid"] == "1":
            e.update(
                {
                    "_PID": "1",
                    "UNIT": unit,
                    "SYSLOG_IDENTIFIER": "systemd",
                    "_COMM": "systemd",
                    "_TRANSPORT": "journal",
                    "PRIORITY": "3" if "Failed" in m["msg"] else "6",
                }
            )
        elif ident == "kernel":
            e.update({"_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel", "PRIORITY": "4"})
        else:
            e.update(
                {
                    "_SYSTEMD_UNIT": unit,
                    "_PID": m["pid"] or "4242",
                    "_COMM": ident,
                    "SYSLOG_IDENTIFIER": ident,
                    "_TRANSPORT": "stdout",
                    "PRIORITY": "6",
                }
            )
        out.append(e)
    return out
