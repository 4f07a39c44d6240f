"""Split an engine's own line prefix off a message, so every line knows its level, time and rank/process.

Forms (engines.md §A/§B):
  SGLang   [2026-05-22 10:38:43 TP0 DP1 PP0 EP2] msg        (rank tags optional)
  vLLM     (APIServer pid=12) INFO 05-22 10:38:43 [file.py:123] msg; (EngineCore_DP0 pid=N), (Worker_TP1 pid=N),
           (VllmWorker rank=1 pid=N), nested (APIServer) (EngineCore_0) (VllmWorker TP0) ...
  torch    [rank0]: msg, [rank1]:[W522 10:38:43 ...] msg
  TGI      2024-05-22T10:38:43.123456Z  INFO text_generation_launcher: msg
  lmdeploy 2024-05-22 10:38:43,123 - lmdeploy - INFO - msg
  TRT-LLM  [TensorRT-LLM][ERROR] msg ; [05/22/2026-10:38:43] [TRT-LLM] [I] msg
  uvicorn  INFO:     msg
A plain regex per form, dispatched on the first character: this runs for every line, so no pyparsing here.
"""

from __future__ import annotations

import re

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass


@dataclass(slots=True)
class Prefix:
    """A log line's engine prefix taken apart: the body and the engine, level, time and rank."""

    body: str
    engine: str | None = None
    level: str | None = None
    ts: str | None = None
    proc: str | None = None
    rank: str | None = None
    src: str | None = None
    tag_pid: int | None = None

    def __init__(  # written out: one per log line (tests/test_startup_dataclass.py checks it against the fields)
        self,
        body: str,
        engine: str | None = None,
        level: str | None = None,
        ts: str | None = None,
        proc: str | None = None,
        rank: str | None = None,
        src: str | None = None,
        tag_pid: int | None = None,
    ) -> None:
        self.body = body
        self.engine = engine
        self.level = level
        self.ts = ts
        self.proc = proc
        self.rank = rank
        self.src = src
        self.tag_pid = tag_pid


_SGL = rxcache.compile(
    r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?)(?P<tags>(?: (?:TP|DP|PP|EP|CP|ATTN_DP|MOE_DP)\d+)*)\] ?"
)
# "(Tag k=v ...) ": the text up to the first ")" (linear: the class has no ")" and nothing nests), then
# _tag_ok checks what the former nested pattern [A-Za-z_][\w.\-]*(?:[ _][\w=.\-]+)* accepted, which backtracked
# exponentially on "(a_a_a_...!" (issue 11; found independently by fuzz/run.py prefix, issue 14). Matched at a
# position (no ^), so nested tags are peeled without copying the rest of the line each time.
_VTAG = rxcache.compile(r"\((?P<tag>[A-Za-z_][\w.\-= ]*)\) ")
_MAX_VTAGS = 8  # vLLM nests at most three, (APIServer) (EngineCore_0) (VllmWorker TP0); more is not a prefix
_VLVL = rxcache.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) "
    r"(?:\[(?P<src>[\w./-]+:\d+)\] |(?P<src2>[\w./-]+\.py:\d+)\] )"
)
_TORCH = rxcache.compile(r"^\[rank(?P<rank>\d+)\]: ?")
_TGI = rxcache.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) +(?P<level>TRACE|DEBUG|INFO|WARN|ERROR) "
    r"(?P<target>[\w:\-]+(?:\{[^}]*\})?): ?"
)
_LMD = rxcache.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?) - (?P<name>[\w.]+) - (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
_TRT = rxcache.compile(
    r"^(?:\[(?P<ts>\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d)\] )?\[(?:TensorRT-LLM|TRT-LLM)\](?: ?\[(?P<rank>RANK \d+)\])? ?"
    r"(?:\[(?P<level>[A-Z]+|[IWEDV])\] ?)?"
)
_UVI = rxcache.compile(r"^(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+")
_PYLOG = rxcache.compile(r"^(?P<level>WARNING|ERROR|CRITICAL|INFO|DEBUG):(?P<name>[\w.]+):")

# the leading token of each form above (SGLang's time, torch's rank, TRT-LLM's tag and time, vLLM's process tag), for
# formats/wrappers.py: a prefix most lines share that no parser knows is reported
LEADS: tuple[str, ...] = (
    r"\[\d{4}-\d\d-\d\d[ T]",
    r"\[rank\d+\]",
    r"\[TensorRT-LLM\]",
    r"\[TRT-LLM\]",
    r"\[\d\d/\d\d/\d{4}",
    r"\((?:[\w.:\-]+ ){0,2}(?:pid|rank)=",
    r"\([A-Z]\w*[_ ]?\w*\) ",
)
_TRT_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "D": "DEBUG", "V": "DEBUG"}


def split_prefix(msg: str) -> Prefix:
    """Return the message body and what its engine prefix says; an unknown prefix leaves the body unchanged."""
    p = Prefix(body=msg)
    c = msg[:1]
    if c == "(":
        _vllm(p)
        return p
    if c == "[":
        m = _SGL.match(msg)
        if m:
            p.engine, p.ts, p.body = "sglang", m.group("ts"), msg[m.end() :]
            u = _UVI.match(p.body)  # uvicorn's own "ERROR:    ..." inside SGLang's prefix
            if u:
                p.level, p.body = u.group("level"), p.body[u.end() :]
            tags = m.group("tags").split()
            if tags:
                p.proc = " ".join(tags)
                p.rank = _sgl_rank(tags)
            return p
        m = _TORCH.match(msg)
        if m:
            p.engine, p.rank, p.proc = "torch", f"rank{m.group('rank')}", f"rank{m.group('rank')}"
            p.body = msg[m.end() :]
            # vLLM often prints a torch-prefixed line whose inner text carries a vLLM tag again
            if p.body.startswith("("):
                inner = Prefix(body=p.body)
                _vllm(inner)
                if inner.engine:
                    inner.rank = inner.rank or p.rank
                    return inner
            return p
        m = _TRT.match(msg)
        if m and m.end() > 0:
            p.engine, p.ts, p.body = "trtllm", m.group("ts"), msg[m.end() :]
            lvl = m.group("level")
            p.level = _TRT_LEVELS.get(lvl, lvl) if lvl else None
            if m.group("rank"):
                p.rank = "rank" + m.group("rank").split()[1]
            return p
        return p
    if c.isdigit():
        m = _TGI.match(msg)
        if m:
            p.engine, p.ts, p.level, p.body = "tgi", m.group("ts"), m.group("level"), msg[m.end() :]
            p.proc = m.group("target")
            rk = re.search(r"rank=(\d+)", p.proc or "")
            if rk:
                p.rank = f"rank{rk.group(1)}"
            return p
        m = _LMD.match(msg)
        if m:
            p.engine, p.ts, p.level, p.body = (
                "lmdeploy" if "lmdeploy" in m.group("name") else None,
                m.group("ts"),
                m.group("level"),
                msg[m.end() :],
            )
            p.proc = m.group("name")
            return p
        return p
    if c.isupper():
        m = _VLVL.match(msg)
        if m:
            p.engine, p.level, p.ts, p.src = (
                "vllm",
                _level(m.group("level")),
                m.group("ts"),
                m.group("src") or m.group("src2"),
            )
            p.body = msg[m.end() :]
            return p
        m = _UVI.match(msg)
        if m:
            p.level, p.body = m.group("level"), msg[m.end() :]
            return p
        m = _PYLOG.match(msg)
        if m:
            p.level, p.proc, p.body = m.group("level"), m.group("name"), msg[m.end() :]
    return p


def _vllm(p: Prefix) -> None:
    """Peel nested (Tag ...) groups; the innermost names the writing process."""
    rest = p.body
    tags: list[str] = []
    pos = 0
    while rest.startswith("(", pos) and len(tags) < _MAX_VTAGS:
        m = _VTAG.match(rest, pos)
        if not m or not _tag_ok(m.group("tag")):
            break
        tags.append(m.group("tag"))
        pos = m.end()
    if not tags:
        return
    rest = rest[pos:]
    p.engine = "vllm"
    inner = tags[-1]
    parts = inner.split()
    name = parts[0]
    kv = {k: v for k, _, v in (x.partition("=") for x in parts[1:] if "=" in x)}
    bare = [x for x in parts[1:] if "=" not in x]
    p.proc = "/".join(t.split()[0] for t in tags) if len(tags) > 1 else name
    if "pid" in kv and kv["pid"].isdigit():
        p.tag_pid = int(kv["pid"])
    p.rank = _vllm_rank(name, kv, bare)
    m = _VLVL.match(rest)
    if m:
        p.level, p.ts, p.src = _level(m.group("level")), m.group("ts"), m.group("src") or m.group("src2")
        rest = rest[m.end() :]
    p.body = rest


def _tag_ok(tag: str) -> bool:
    """The tag grammar: a space always separates words (never doubled, never last), and "=" appears only after a
    word separator (a space or "_" after the first character)."""
    if "  " in tag or tag.endswith(" "):
        return False
    eq = tag.find("=")
    return eq < 0 or any(c in " _" for c in tag[1:eq])


def _vllm_rank(name: str, kv: dict[str, str], bare: list[str]) -> str | None:
    for tok in [name, *bare]:
        m = re.search(r"(?:^|_)(TP|DP|PP|EP)(\d+)", tok)
        if m and not tok.startswith("EngineCore"):
            return f"{m.group(1)}{m.group(2)}"
    if "rank" in kv:
        return f"TP{kv['rank']}" if "Worker" in name else f"rank{kv['rank']}"
    return None


def _sgl_rank(tags: list[str]) -> str:
    """Canonical rank: the TP rank, qualified by DP/PP when those are present and non-trivial."""
    d = {t.rstrip("0123456789"): t for t in tags}
    parts = [d[k] for k in ("DP", "PP") if k in d and d[k][2:] != "0"]
    if "TP" in d:
        parts.append(d["TP"])
    return " ".join(parts) if parts else tags[0]


def _level(s: str) -> str:
    return "WARNING" if s == "WARN" else s
