"""One compiled prefilter over whole byte buffers: every pattern the rules and phase markers can use.

Triage reads mostly noise (request logs, throughput lines). Instead of turning every line into a Record, the scanner
runs this one regex over a whole buffer and visits only the lines it hits; the rest of the bytes are never decoded
unless the attempt they belong to shows a failure signal (then that attempt is parsed in full by `diagnose`).

Three groups, in one alternation (named groups tell them apart):
  boundary  where a new attempt can start (config dumps, version banners, a new boot)
  signal    a failure could be here (tracebacks, errors, deaths, systemd failures, kernel Xid/OOM): parse in full
  relevant  phase markers, engine signatures, systemd/kernel lines, the rules' message patterns: enough for a
            healthy attempt's row, and what a big failing attempt keeps of its middle
The serving-evidence markers (request logs, throughput lines) are most of a healthy log, so they are left out: the
raw tail the scanner keeps of every attempt shows whether it was still serving.
RE2 (`google-re2`, in the `triage` extra) runs the same pattern several times faster than `re`; `re` is the fallback.
"""

from __future__ import annotations

import re
from functools import lru_cache

from logdoctor.core.lean import dataclass
from logdoctor.engines import ENGINES
from logdoctor.engines.markers import Marker

# words that any failure prints somewhere (a superset of what makes timeline._decide call an attempt failed;
# tests/test_triage_prefilter.py checks it on every fixture)
SIGNAL = (
    r"Traceback",
    r"[Ee]rror",
    r"ERROR",
    r"CRITICAL",
    r"[Ee]xception",
    r"EXCEPTION",
    r"[Kk]illed",
    r"[Ff]ailed",
    r"FAILED",
    r"[Ff]atal",
    r"FATAL",
    r"[Aa]bort",
    r"[Dd]ied",
    r"is dead",
    r"[Cc]rash",
    r"timed out",
    r"\b[Tt]imeout\b",
    r"oom",
    r"OOM",
    r"Out of memory",
    r"out of memory",
    r"NVRM",
    r"Xid",
    r"fallen off",
    r"sigquit",
    r"Segmentation",
    r"core dumped",
    r"terminate called",
    r"what\(\):",
    r"Main process exited",
    r"Failed with result",
    r"Scheduled restart",
    r"ECC",
    r"[Uu]ncorrectable",
)
# systemd's and journalctl's own lines about the unit (attempt starts/stops), kept for healthy rows too
RELEVANT_EXTRA = (r"systemd\[1\]: ", r"Start(?:ed|ing) ", r"Stopp(?:ed|ing) ", r"Deactivated", r"-- No entries")
SERVING_MARKERS = ("serving_stats",)


def _unanchor(pattern: str) -> str:
    """Marker patterns are anchored to the message body; in a raw line the prefixes come first."""
    p = pattern
    flags = re.match(r"^\(\?([aiLmsux]+)\)", p)
    if flags:  # a leading global flag becomes a scoped one (global flags must start the whole alternation)
        p = f"(?{flags.group(1)}:{p[flags.end() :]})"
    if p.startswith("^"):
        p = p[1:]
    p = re.sub(r"(?<!\\)\$(?=\)|\||$)", "", p)
    p = re.sub(r"\|\^", "|", p)
    # named groups would clash in one alternation
    p = re.sub(r"\(\?P<\w+>", "(?:", p)
    return p


def boundary_patterns() -> list[str]:
    """Attempt boundaries on a raw line: the patterns `attempts.split` cuts on (attempts.STARTS: every engine's config
    dump / version banner, unanchored) and a journal's boot line; derived, never written twice."""
    from logdoctor.timeline.attempts import BOOT, STARTS

    return list(dict.fromkeys(_unanchor(p) for p in STARTS)) + [BOOT + " "]


def _marker_patterns(markers: tuple[Marker, ...]) -> list[str]:
    return [_unanchor(m.pattern) for m in markers if m.name not in SERVING_MARKERS]


def _signatures() -> list[str]:
    return [re.escape(s) for e in ENGINES.values() for s in e.signatures]


def _rule_patterns() -> list[str]:
    """The line-level regexes of every bundled rule (`Leaf.line` in the leaf registry: frame/file leaves match
    traceback frames, which only a full parse of a failing attempt sees)."""
    from logdoctor.matching.conditions import leaves
    from logdoctor.matching.loader import load_rules

    return [_unanchor(p) for r in load_rules(()) for lf in leaves(r.cond) if lf.spec.line for p in lf.patterns if p]


# lines every healthy log is full of: a pattern that matches one of these (a rule's catch-all `.+`) would select
# every line, so it cannot serve as a prefilter (the full parse of a failing attempt still applies it)
_PROBES = (
    "x",
    "hello world 123",
    '[2026-05-22 11:00:01] INFO:     10.0.1.2:51234 - "POST /generate HTTP/1.1" 200 OK',
    "[2026-05-22 11:00:01 TP0] Decode batch. #running-req: 5, #token: 700, token usage: 0.21, cuda graph: True, "
    "gen throughput (token/s): 100.1, #queue-req: 0",
    "INFO 05-22 11:00:01 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation "
    "throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit rate: 0.0%",
)


def _valid(p: str) -> bool:
    try:
        rx = re.compile(p)
    except re.error:
        return False
    return not any(rx.search(x) for x in _PROBES)


def _drop_lookarounds(p: str) -> str:
    """RE2 has no lookarounds; removing one only widens the pattern (a prefilter may select more, never less)."""
    out, i = [], 0
    while i < len(p):
        if p.startswith(("(?=", "(?!", "(?<=", "(?<!"), i) and (i == 0 or p[i - 1] != "\\"):
            depth, j = 0, i
            while j < len(p):
                c = p[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[":
                    k = p.find("]", j + 2)
                    j = (k if k > 0 else j) + 1
                    continue
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            i = j + 1
            continue
        out.append(p[i])
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Groups:
    """The prefilter's pattern groups, built from the engine registry and the rules (one per process)."""

    boundary: list[str]
    signal: list[str]
    relevant: list[str]
    keywords: list[str]  # literal-only stand-in for `relevant` when RE2 is missing


@lru_cache(maxsize=1)
def groups() -> Groups:
    markers = tuple(m for e in ENGINES.values() for m in e.markers)  # every registered engine's tables
    deaths = tuple(m for e in ENGINES.values() for m in e.deaths)
    # rule patterns are conditions, not failure signals (a config rule matches `trust_remote_code` in every dump):
    # they keep their lines for the reduced parse, but only failure words and deaths make an attempt worth a full one
    signal = list(SIGNAL) + _marker_patterns(deaths)
    relevant = _marker_patterns(markers) + _signatures() + list(RELEVANT_EXTRA) + _rule_patterns()
    keywords = (
        [
            re.escape(k)
            for m in markers + deaths
            if m.name not in SERVING_MARKERS
            for k in m.keyword.split("|")
            if len(k) >= 4
        ]
        + _signatures()
        + list(RELEVANT_EXTRA)
    )
    raw = [boundary_patterns(), signal, relevant, keywords]
    cached = _cached_groups(raw)
    if cached is not None:
        return cached
    dedup = lambda xs: list(dict.fromkeys(p for p in xs if p and _valid(p)))  # noqa: E731
    got = Groups(*(dedup(xs) for xs in raw))
    _store_groups(raw, got)
    return got


def _groups_path(raw: list[list[str]]):
    """Probing ~500 candidate patterns with `re` (`_valid`) is ~0.1 s of every triage start: the outcome is kept,
    keyed by the candidates themselves, so any change to a rule, a marker or a list here gives a new key."""
    import hashlib
    import json

    from logdoctor.matching.cache import cache_dir

    key = hashlib.sha256(json.dumps([FORMAT, _PROBES, raw]).encode()).hexdigest()[:32]
    return cache_dir() / f"prefilter-{key}.json"


def _cached_groups(raw: list[list[str]]) -> Groups | None:
    import json

    from logdoctor.matching.cache import read_entry

    try:
        got = json.loads(read_entry(_groups_path(raw)))
        kept = [list(x) for x in got]
        # only ever a subset of the candidates, in their order: a damaged entry cannot add a pattern
        if len(kept) == 4 and all(all(isinstance(p, str) for p in k) and set(k) <= set(r) for k, r in zip(kept, raw)):
            return Groups(*kept)
    except Exception:  # noqa: BLE001, S110 - absent, foreign or damaged: probe again
        pass
    return None


def _store_groups(raw: list[list[str]], got: Groups) -> None:
    import json

    from logdoctor.matching.cache import write_entry

    write_entry(_groups_path(raw), json.dumps([got.boundary, got.signal, got.relevant, got.keywords]).encode(), keep=4)


def _alt(ps: list[str]) -> str:
    return "|".join(f"(?:{p})" for p in ps)


def pattern(engine: str = "re2") -> str:
    """The alternation. Python's `re` backtracks through ~350 alternatives at every byte (well under 1 MB/s), so
    without RE2 the prefilter keeps the literal part only: boundaries, failure words, engine signatures and the
    markers' keywords (looser, so it selects more lines, never fewer)."""
    g = groups()
    if engine == "re2":
        parts = [("b", g.boundary), ("s", g.signal), ("r", g.relevant)]
    else:
        parts = [("b", g.boundary), ("s", list(SIGNAL)), ("r", g.keywords)]
    return "|".join(f"(?P<{k}>{_alt(ps)})" for k, ps in parts)


def grep_pattern() -> str:
    """The same patterns for `grep -cE -f` in bench/, one a line (POSIX ERE: no (?:...) groups, no \\d); the
    bench drops those grep still refuses."""
    g = groups()
    ps = g.boundary + g.signal + g.relevant
    ere = []
    for p in ps:
        q = p.replace("(?:", "(").replace(r"\d", "[0-9]").replace(r"\w", "[A-Za-z0-9_]").replace(r"\s", "[[:space:]]")
        q = (
            q.replace(r"\S", "[^[:space:]]")
            .replace("(?i)", "")
            .replace("*?", "*")
            .replace("+?", "+")
            .replace("??", "?")
        )
        if "(?" in q or "\\b" in q:
            continue
        ere.append(q)
    return "\n".join(ere)  # one pattern a line: grep -f takes them as alternatives


class Prefilter:
    """The compiled prefilter: `regex.search(buf, pos)`; `m.lastgroup` is b (boundary), s (signal) or r (relevant).

    With Hyperscan as well (`lines` is set), one multi-pattern scan of the whole buffer names the candidate lines
    (a superset: Hyperscan's prefilter mode may widen a pattern, never narrow it) and `regex` is run on each of
    those lines only, so a line's group is decided by the same RE2 alternation either way."""

    def __init__(self, engine: str | None = None, scanner: str | None = None):
        self.engine = engine or best_engine()
        self.regex = _compile(pattern(self.engine), self.engine)
        # run on a hit line that matched as a marker or rule first: an earlier, longer match can cover a failure word
        self.signal = _compile(_alt(groups().signal if self.engine == "re2" else list(SIGNAL)), self.engine)
        self.boundary = _compile(_alt(groups().boundary), self.engine)
        want = scanner or best_scanner()
        self.lines = HyperscanLines(_all_patterns()) if want == "hyperscan" and self.engine == "re2" else None
        self.scanner = "hyperscan" if self.lines is not None and self.lines.ok else self.engine
        if self.lines is not None and not self.lines.ok:
            self.lines = None


@lru_cache(maxsize=1)
def shared() -> Prefilter:
    """The compiled prefilter, once per process: explain's read and every triage task (a forked worker inherits it)
    use this one."""
    return Prefilter()


def _all_patterns() -> list[str]:
    g = groups()
    return [_drop_lookarounds(p) for p in g.boundary + g.signal + g.relevant]


class HyperscanLines:
    """Every pattern of the alternation compiled into one Hyperscan block-mode database; `ends(buf)` gives the end
    offsets of all their matches in a buffer, sorted. Hyperscan scans a buffer at GB/s whatever the pattern count
    (RE2's DFA over ~340 alternatives manages a few hundred MB/s and slows as its state cache thrashes); a match
    callback runs only where a pattern ends, ~2 % of lines in a serving log. `ok` is False when hyperscan is
    missing or refuses a pattern: the scanner then runs RE2 over the buffer as before.

    The database works on bytes (its UTF-8 mode takes ~30 s to compile), where RE2 works on UTF-8 characters: on
    an ASCII line the two read a pattern alike, on a line with other bytes `.` or `[^x]` may not. So one more
    pattern ends on every line that holds a non-ASCII byte (once per line: Hyperscan reports a pattern once per
    end offset), and RE2 decides those lines itself."""

    NON_ASCII = rb"[\x80-\xff][^\n]*\n"

    def __init__(self, patterns: list[str]):
        self.ok = False
        try:
            import hyperscan
        except ImportError:
            return
        exprs = [p.encode() for p in patterns] + [self.NON_ASCII]
        flags = [hyperscan.HS_FLAG_PREFILTER] * len(patterns) + [0]
        db = _cached_database(hyperscan, exprs, flags)
        if db is None:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            try:
                db.compile(expressions=exprs, ids=list(range(len(exprs))), flags=flags)
            except Exception:  # noqa: BLE001 - a construct Hyperscan refuses even as a prefilter: keep RE2's scan
                return
            _store_database(hyperscan, exprs, flags, db)
        self.db = db
        self.ok = True

    def ends(self, buf: bytes) -> list[int]:
        found: list[int] = []
        add = found.append

        def on_match(_id, _start, end, _flags, _ctx):
            add(end)

        self.db.scan(buf, match_event_handler=on_match)
        found.sort()
        return found


def _database_path(hyperscan, exprs: list[bytes], flags: list[int]):
    """Compiling ~340 patterns takes ~0.3 s, a third of triage's start-up: the compiled database is kept in the
    rule cache's folder, keyed by every pattern, flag and the library's version (a rule edit gives a new key)."""
    import hashlib

    from logdoctor.matching.cache import cache_dir

    h = hashlib.sha256(f"hyperscan {getattr(hyperscan, '__version__', '')} {FORMAT}\n".encode())
    for e, f in zip(exprs, flags):
        h.update(e + b"\0" + str(f).encode() + b"\0")
    return cache_dir() / f"hyperscan-{h.hexdigest()[:32]}.db"


FORMAT = 1  # of the cached database's key


def _cached_database(hyperscan, exprs: list[bytes], flags: list[int]):
    """The cached database, or None (absent, not this user's file, or refused by Hyperscan's own checks)."""
    from logdoctor.matching.cache import read_entry

    try:
        db = hyperscan.loadb(read_entry(_database_path(hyperscan, exprs, flags)), mode=hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)  # a loaded database comes without one
        db.scan(b"x\n", match_event_handler=lambda *a: None)
        return db
    except Exception:  # noqa: BLE001 - absent, foreign or damaged: compile again
        return None


def _store_database(hyperscan, exprs: list[bytes], flags: list[int], db) -> None:
    from logdoctor.matching.cache import write_entry

    try:
        data = hyperscan.dumpb(db)
    except Exception:  # noqa: BLE001 - a database the library cannot serialise: compile again next time
        return
    write_entry(_database_path(hyperscan, exprs, flags), data, keep=4)


def best_engine() -> str:
    try:
        import re2  # noqa: F401  (google-re2)

        return "re2"
    except ImportError:
        return "re"


def best_scanner() -> str:
    """hyperscan (with RE2 to classify its candidate lines), else the regex engine alone."""
    if best_engine() != "re2":
        return "re"
    try:
        import hyperscan  # noqa: F401

        return "hyperscan"
    except ImportError:
        return "re2"


def _compile(p: str, engine: str):
    if engine == "re2":
        import re2

        p = _drop_lookarounds(p)
        opts = re2.Options()
        opts.max_mem = 256 << 20
        try:
            return re2.compile(p.encode(), options=opts)
        except Exception:  # noqa: BLE001, S110 - a construct RE2 lacks: fall back to Python's engine
            pass
    return re.compile(p.encode())
