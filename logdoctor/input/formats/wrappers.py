"""Line prefixes of the process managers engines run under, peeled before the engine's own prefix.

  Ray         (RayWorkerWrapper pid=4242, ip=10.0.0.2) msg · (raylet, ip=10.0.0.2) msg · (pid=77) msg
              and its dedup suffix " [repeated 7x across cluster]"
  torchrun    [default3]:msg   (--tee / --log-dir redirects; "[rank3]:" is torch's own and handled by the engine
              prefix parser)
  mpirun      [1,3]<stderr>:msg · [1,3]<stdout>:msg   (--tag-output: jobid,rank; [1,3][host:pid]<stderr>: detailed;
              [label]<stderr>: another launcher's rank label, the rank its last number)
  srun        3: msg   (--label; trusted only when most lines of the log carry it)
  kubectl     [pod/NAME/CONTAINER] msg · [pod/NAME/CONTAINER] 2026-01-01T00:00:00.123Z msg   (--prefix [--timestamps])
  compose     svc-1  | msg   (formats/container.py)
  TAI64N      @4000000068ee369c07d4a31e msg   (daemontools multilog, s6-log, runit svlogd -tt: a label of TAI seconds
              since 1970 plus 2^62 + 10, and nanoseconds, in hex)
  quote       > msg · >> msg · > > msg   (an e-mail, Slack or GitHub quote of a log: peeled before anything else, when
              most lines of the log carry it; `quote`)

The name and pid give the writer (and with them the stream a traceback belongs to), the number the rank; the rest of
the line goes through the normal engine prefix parsing. `detect` also reports a prefix that most lines of a log share
and no parser knows, so the reader says so instead of silently reading the log as raw text.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass
from logdoctor.engines.prefixes import LEADS as ENGINE_LEADS
from logdoctor.input.formats.container import iso_ts

_RAY = rxcache.compile(
    r"^\((?P<name>[A-Za-z_][\w.:\-]*(?: [A-Za-z_][\w\-]*)?)?(?:,? ?pid=(?P<pid>\d+))?(?:, ip=(?P<ip>[0-9a-fA-F.:]+))?"
    r"(?:, (?:node_id|actor_id|repr)=[^)]*)?\) "
)
_RAY_DEDUP = rxcache.compile(r" \[repeated \d+x across cluster\](?: \(Ray deduplicates logs[^)]*\))?$")
_TORCHRUN = rxcache.compile(r"^\[(?P<group>default|rank|local_rank)(?P<n>\d+)\]:")
# Open MPI / PRRTE --output tag ("[1,3]<stderr>:") and tag-detailed ("[1,3][host:pid]<stderr>:"), and launchers that
# label a rank their own way before the same stream tag ("[node-03:rank2]<stderr>:"): the rank is its last number
_MPI = rxcache.compile(
    r"^\[(?:(?P<job>\d+),(?P<rank>\d+)|(?P<label>[\w.-]+(?::[\w.-]+)?))\](?:\[[\w.-]+:\d+\])?"
    r"<(?P<stream>stdout|stderr|stddiag)>: ?"
)
_LAST_NUMBER = rxcache.compile(r"(\d+)\D*$")
_SRUN = rxcache.compile(r"^(?P<n>\d{1,4}): ")
_KUBECTL = rxcache.compile(r"^\[pod/(?P<pod>[\w.\-]+)/(?P<container>[\w.\-]+)\] ")
_TAI64N = rxcache.compile(r"^@(?P<sec>4[0-9a-f]{15})(?P<nano>[0-9a-f]{8}) ")
_TAI64_EPOCH = (1 << 62) + 10  # the label of 1970-01-01 00:00:00 UTC, as the daemontools family writes it
_RFC3339 = rxcache.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?P<frac>\.\d{1,9})?(?P<tz>Z|[+-]\d\d:\d\d) ")
# the leading token of a line, for spotting a whole-log prefix nobody parses: bracketed / parenthesised tags,
# "name |", "name:" labels
_LEAD = rxcache.compile(r"^(?:\[[^\]\s]{1,80}\]|\([^)]{1,80}\)|[\w.\-]{1,40} ?\||<[^>]{1,40}>)")
# the leading tokens some parser knows: these wrappers', the engines' own prefixes (engines/prefixes.py LEADS), and
# glog / source-location / bare-level tags
_KNOWN_LEAD = rxcache.compile(
    r"^(?:\((?:raylet|pid=|gcs_server|autoscaler)|[\w.\-]+\s+\| |\[(?:default|local_rank)\d+\]|\[pod/|"
    + "".join(f"{lead}|" for lead in ENGINE_LEADS)
    + r"\[[A-Z]\d{4} |\[[\w.]+\.(?:py|cc|cpp|h):\d+\]|\[(?:INFO|WARN|WARNING|ERROR|DEBUG)\])"
)
WRAPPERS = ("ray", "torchrun", "mpirun", "srun", "kubectl", "tai64n")


@dataclass(slots=True)
class Peeled:
    """A line with its process manager's prefix (Ray, torchrun, mpirun, srun, kubectl ...) taken off."""

    body: str
    wrapper: str | None = None
    proc: str | None = None
    rank: str | None = None
    pid: int | None = None
    ts: datetime | None = None
    ident: str | None = None

    def __init__(  # written out: one per log line (tests/test_startup_dataclass.py checks it against the fields)
        self,
        body: str,
        wrapper: str | None = None,
        proc: str | None = None,
        rank: str | None = None,
        pid: int | None = None,
        ts: datetime | None = None,
        ident: str | None = None,
    ) -> None:
        self.body = body
        self.wrapper = wrapper
        self.proc = proc
        self.rank = rank
        self.pid = pid
        self.ts = ts
        self.ident = ident


def detect(lines: list[str]) -> tuple[frozenset[str], str | None]:
    """Which ambiguous wrappers (srun labels) this log uses, and an unknown prefix most lines share (or None)."""
    sample = [l for l in lines[:600] if l.strip()]
    kinds = set()
    if sample:
        srun = sum(1 for l in sample if _SRUN.match(l))
        if srun * 2 >= len(sample) and srun >= 3:
            kinds.add("srun")
    unknown = None
    leads: Counter[str] = Counter()
    for l in sample:
        m = _LEAD.match(l)
        if m and not _KNOWN_LEAD.match(l) and not _MPI.match(l):  # _MPI: the stream-tag labels, whatever the rank label
            leads[re.sub(r"\d+", "N", m.group(0))] += 1
    if leads and sample:
        lead, n = leads.most_common(1)[0]
        if n * 2 >= len(sample) and n >= 5:
            unknown = lead
    return frozenset(kinds), unknown


# a quote mark of e-mail / chat / Markdown, nested ("> ", ">> ", "> > "): one space after the last mark belongs to it,
# the rest of the line's indentation (a traceback's "  File") to the log
_QUOTE = rxcache.compile(r"^ {0,3}>(?: ?>)*(?: |$)")


def quote(lines: list[str]) -> re.Pattern | None:
    """The quote prefix of a log pasted as a quote (most of its first lines start with "> " or ">> "), else None.
    A log whose lines only sometimes start with ">" (a shell's continuation prompt) is no quote."""
    sample = [l for l in lines[:600] if l.strip()]
    n = sum(1 for l in sample if _QUOTE.match(l))
    return _QUOTE if n >= 3 and n * 4 >= len(sample) * 3 else None


def unknown_rx(lead: str | None) -> re.Pattern | None:
    """The regex of a whole-log prefix `detect` found (digits were normalised to N)."""
    if not lead:
        return None
    return rxcache.compile("^" + re.escape(lead).replace("N", r"\d+") + " ?")


def _ranked(p, wrapper: str, n: str, body: str) -> None:
    """A launcher's per-rank label (mpirun "[1,N]<stderr>:", torchrun "[defaultN]:", srun "N: "): the outermost
    wrapper and rank win when labels nest."""
    p.wrapper = p.wrapper or wrapper
    p.rank = p.rank or f"rank{n}"
    p.proc = p.proc or p.rank
    p.body = body


def _peel_bracket(p: Peeled, body: str) -> bool:
    """A ``[...]`` label: kubectl's ``[pod/NAME/CONTAINER]`` (with its optional RFC 3339 stamp), mpirun's
    ``[1,N]<stderr>:`` or torchrun's ``[defaultN]:`` (``[rankN]:`` is torch's own, left to the engine parser)."""
    m = _KUBECTL.match(body)
    if m:
        p.wrapper, p.ident = p.wrapper or "kubectl", m.group("pod")
        body = body[m.end() :]
        t = _RFC3339.match(body)
        if t:
            p.ts = iso_ts(t)
            body = body[t.end() :]
        p.body = body
        return True
    m = _MPI.match(body)
    if m:
        rank = m.group("rank")
        if rank is None:
            last = _LAST_NUMBER.search(m.group("label"))
            rank = last.group(1) if last else None
        if rank is None:
            p.wrapper, p.body = p.wrapper or "mpirun", body[m.end() :]
        else:
            _ranked(p, "mpirun", rank, body[m.end() :])
        return True
    m = _TORCHRUN.match(body)
    if m and m.group("group") != "rank":
        _ranked(p, "torchrun", m.group("n"), body[m.end() :])
        return True
    return False


def _peel_ray(p: Peeled, body: str) -> bool:
    """Ray's ``(Name pid=N, ip=A)`` tag: the actor name is the process (and gives the rank when it names one)."""
    m = _RAY.match(body)
    if not (m and (m.group("pid") or m.group("ip") or m.group("name"))):
        return False
    p.wrapper = p.wrapper or "ray"
    name = (m.group("name") or "").strip() or None
    p.proc = p.proc or name
    if m.group("pid"):
        p.pid = p.pid or int(m.group("pid"))
    rk = re.search(r"(?:^|[_ ])(TP|DP|PP|EP)(\d+)\b", name or "")
    if rk and not p.rank:
        p.rank = f"{rk.group(1)}{rk.group(2)}"
    p.body = _RAY_DEDUP.sub("", body[m.end() :])
    return True


def _peel_tai64n(p: Peeled, body: str) -> bool:
    """A daemontools-family TAI64N label (s6-log, multilog, svlogd -tt): the line's time, then the program's line."""
    m = _TAI64N.match(body)
    if m is None:
        return False
    secs = int(m.group("sec"), 16) - _TAI64_EPOCH
    try:
        p.ts = datetime.fromtimestamp(secs + int(m.group("nano"), 16) / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        p.ts = None
    p.wrapper, p.body = p.wrapper or "tai64n", body[m.end() :]
    return True


def _peel_srun(p: Peeled, body: str) -> bool:
    """srun's ``N: `` label (only when `detect` found most lines carry it)."""
    m = _SRUN.match(body)
    if m:
        _ranked(p, "srun", m.group("n"), body[m.end() :])
    return m is not None


def peel(msg: str, kinds: frozenset[str] = frozenset(), unknown: re.Pattern | None = None) -> Peeled:
    """Strip process-manager prefixes (they can nest: kubectl around torchrun around an engine line). A prefix that
    most lines share and no parser knows (`unknown`) is peeled too: it is a prefix by construction."""
    p = Peeled(body=msg)
    if unknown is not None:
        m = unknown.match(msg)
        if m:
            p.wrapper, p.body = "unknown", msg[m.end() :]
    for _ in range(3):
        body = p.body
        c = body[:1]  # the first character picks the candidates: most lines have no wrapper and stop here
        if c == "[":
            peeled = _peel_bracket(p, body)
        elif c == "(" and (
            ", ip=" in body[:120] or body.startswith(("(raylet", "(pid=", "(gcs_server", "(autoscaler"))
        ):
            peeled = _peel_ray(p, body)
        elif c == "@":
            peeled = _peel_tai64n(p, body)
        elif "srun" in kinds and c.isdigit():
            peeled = _peel_srun(p, body)
        else:
            peeled = False
        if not peeled:
            break
    if p.wrapper == "ray" or " [repeated " in p.body[-60:]:
        p.body = _RAY_DEDUP.sub("", p.body)
    return p
