"""Renderers: records -> the text a user would paste.

journal-short / -precise / -iso (journalctl -o short*), journal-json (-o json),
cat (-o cat), docker (docker logs [-t]), kubectl (kubectl logs --timestamps),
and paste (raw lines, used for bug-report excerpts).
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .timeline import Record

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TQDM = re.compile(r"^(Loading safetensors checkpoint shards|Capturing batches|Loading pt checkpoint shards|"
                  r"Multi-thread loading shards)")

# label `format` value for each renderer
LABEL_FORMAT = {
    "short": "journal-short", "short-precise": "journal-short", "short-iso": "journal-short-iso",
    "json": "journal-json", "cat": "raw", "kubectl": "raw", "paste": "raw",
    "docker": "docker", "docker-t": "docker",
}


@dataclass
class View:
    """What the user asked for: the output format and the selection."""
    fmt: str = "short"          # one of LABEL_FORMAT
    scope: str = "unit"         # unit: journalctl -u (app + PID 1 lines); boot: journalctl -b (all);
                                # app: container stdout only (docker/kubectl)
    tail: int | None = None     # journalctl -n N / docker logs --tail N (entries)
    all_chars: bool = False     # journalctl -a: keep ESC sequences
    json_all: bool = True       # -o json -a: keep fields > 4096 bytes
    utc_offset_h: int = 0       # host TZ (journal times are host-local)
    iso_colon: bool = False     # newer systemd prints +00:00
    header: bool = False        # '-- Journal begins at ... --' (older systemd)
    cr_bars: bool = False       # docker/raw: tqdm redraws joined by \r on one line


def select(records: list[Record], view: View) -> list[Record]:
    if view.scope == "unit":
        recs = [r for r in records if r.kind in ("app", "unit")]
    elif view.scope == "app":
        recs = [r for r in records if r.kind == "app"]
    else:
        recs = list(records)
    if view.tail:
        recs = recs[-view.tail:]
    return recs


def _hex(seed: str, n: int = 32) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def _prefix_short(r: Record, view: View, host: str) -> str:
    if view.fmt == "short-iso":
        off = f"{view.utc_offset_h:+03d}:00" if view.iso_colon else f"{view.utc_offset_h:+03d}00"
        ts = r.t.strftime("%Y-%m-%dT%H:%M:%S") + off
    elif view.fmt == "short-precise":
        ts = r.t.strftime("%b %d %H:%M:%S.%f")
    else:
        ts = r.t.strftime("%b %d %H:%M:%S")
    who = "kernel" if r.kind == "kernel" else f"{r.ident}[{r.pid}]"
    return f"{ts} {host} {who}: "


def _short(recs: list[Record], view: View, host: str) -> list[str]:
    out: list[str] = []
    if view.header and recs:
        first, last = recs[0].t, recs[-1].t
        fmt = "%a %Y-%m-%d %H:%M:%S UTC"
        out.append(f"-- Journal begins at {(first - timedelta(days=41)).strftime(fmt)}, "
                   f"ends at {last.strftime(fmt)}. --")
    boot = recs[0].boot if recs else 0
    for r in recs:
        if r.boot != boot:
            out.append(f"-- Boot {_hex(host + str(r.boot))} --")
            boot = r.boot
        msg = r.msg if view.all_chars else ANSI.sub("", r.msg).expandtabs()
        pre = _prefix_short(r, view, host)
        lines = msg.split("\n")
        out.append(pre + lines[0])
        out.extend(" " * len(pre) + ln for ln in lines[1:])
    return out


def _epoch_us(t: datetime, off_h: int) -> int:
    aware = t.replace(tzinfo=timezone(timedelta(hours=off_h)))
    return int(aware.timestamp()) * 1_000_000 + t.microsecond


def _json(recs: list[Record], view: View, host: str, unit: str, rng: random.Random,
          comm: str, exe: str, cmdline: str) -> list[str]:
    out = []
    machine = _hex("machine" + host)
    inv = _hex(f"inv{host}0")
    last_pid = None
    for i, r in enumerate(recs):
        if r.kind == "app" and r.pid != last_pid:
            last_pid = r.pid
            inv = _hex(f"inv{host}{r.pid}")
        boot_id = _hex(host + str(r.boot))
        real = _epoch_us(r.t, view.utc_offset_h)
        mono = int(r.mono * 1_000_000)
        seq = 0x3a2f10 + i
        cursor = (f"s={_hex('seqnum' + host)};i={seq:x};b={boot_id};m={mono:x};t={real:x};"
                  f"x={_hex(str(real) + str(i), 16)}")
        f: dict[str, object] = {
            "_HOSTNAME": host, "_MACHINE_ID": machine, "PRIORITY": str(r.priority),
            "SYSLOG_IDENTIFIER": r.ident, "MESSAGE": _json_msg(r.msg, view),
        }
        if r.kind == "kernel":
            f.update({"_TRANSPORT": "kernel", "SYSLOG_FACILITY": "0",
                      "_SOURCE_MONOTONIC_TIMESTAMP": str(mono - 731)})
        elif r.kind == "unit":
            f.update({"_TRANSPORT": "journal", "_PID": "1", "_UID": "0", "_GID": "0", "_COMM": "systemd",
                      "_EXE": "/usr/lib/systemd/systemd", "SYSLOG_FACILITY": "3", "UNIT": unit,
                      "_CMDLINE": "/sbin/init", "_SYSTEMD_CGROUP": "/init.scope", "_SYSTEMD_UNIT": "init.scope",
                      "_SYSTEMD_SLICE": "-.slice", "INVOCATION_ID": inv, "CODE_FILE": "src/core/unit.c",
                      "_CAP_EFFECTIVE": "1ffffffffff", "_SOURCE_REALTIME_TIMESTAMP": str(real - 17)})
        elif r.kind == "app":
            f.update({"_TRANSPORT": "stdout", "_PID": str(r.pid), "_UID": "0", "_GID": "0", "_COMM": comm,
                      "_EXE": exe, "_CMDLINE": cmdline, "SYSLOG_FACILITY": "3", "_SYSTEMD_UNIT": unit,
                      "_SYSTEMD_CGROUP": f"/system.slice/{unit}", "_SYSTEMD_SLICE": "system.slice",
                      "_SYSTEMD_INVOCATION_ID": inv, "_STREAM_ID": _hex(f"stream{r.pid}"),
                      "_CAP_EFFECTIVE": "1ffffffffff"})
        else:
            f.update({"_TRANSPORT": "syslog", "_PID": str(r.pid), "SYSLOG_FACILITY": "4",
                      "_COMM": r.ident, "_UID": "0", "_GID": "0"})
        keys = list(f)
        rng.shuffle(keys)
        obj = {"__CURSOR": cursor, "__REALTIME_TIMESTAMP": str(real), "__MONOTONIC_TIMESTAMP": str(mono),
               "_BOOT_ID": boot_id}
        obj.update({k: f[k] for k in keys})
        out.append(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))
    return out


def _json_msg(msg: str, view: View) -> object:
    raw = msg.encode()
    if not view.json_all and len(raw) > 4096:
        return None
    if "\x1b" in msg or "\t" in msg:
        return list(raw)
    return msg


def _docker(recs: list[Record], view: View) -> list[str]:
    out: list[str] = []
    stamp = view.fmt in ("docker-t", "kubectl")
    pending: list[str] = []

    def ts(r: Record, k: int) -> str:
        utc = r.t - timedelta(hours=view.utc_offset_h)
        nanos = r.t.microsecond * 1000 + (k * 137 + r.t.second * 7 + 1) % 1000
        s = utc.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}"
        if view.fmt == "kubectl":
            s = s.rstrip("0").rstrip(".")
        return s + "Z "

    for k, r in enumerate(recs):
        for ln in r.msg.split("\n"):
            if view.cr_bars and TQDM.match(ln):
                pending.append(ln)
                continue
            if pending:
                out.append((ts(r, k) if stamp else "") + "\r".join(pending))
                pending = []
            out.append((ts(r, k) if stamp else "") + ln)
    if pending:
        out.append("\r".join(pending))
    return out


def render(records: list[Record], view: View, host: str, unit: str, rng: random.Random,
           comm: str = "python3", exe: str = "/usr/bin/python3.12", cmdline: str = "") -> str:
    recs = select(records, view)
    if view.fmt in ("short", "short-precise", "short-iso"):
        lines = _short(recs, view, host)
    elif view.fmt == "json":
        lines = _json(recs, view, host, unit, rng, comm, exe, cmdline)
    elif view.fmt in ("docker", "docker-t", "kubectl"):
        lines = _docker(recs, view)
    else:  # cat / paste
        lines = [ln for r in recs for ln in r.msg.split("\n")]
        if view.cr_bars:
            lines = _docker(recs, View(fmt="docker", cr_bars=True))
    return "\n".join(lines) + "\n"
