"""Which engine wrote this log, and which version: votes from line prefixes, marker hits and signatures."""
from __future__ import annotations

import re

from logdoctor.engines import others, sglang, vllm
from logdoctor.records import Record

ENGINES = ("sglang", "vllm", "tgi", "trtllm", "lmdeploy")
_SIGS = {"sglang": sglang.SIGNATURES, "vllm": vllm.SIGNATURES, "tgi": others.TGI_SIGNATURES,
         "trtllm": others.TRTLLM_SIGNATURES, "lmdeploy": others.LMDEPLOY_SIGNATURES}
_VLLM_VER = re.compile(r"(?:vLLM (?:server|API server) version|LLM engine \(v)\s*v?(?P<v>\d+\.\d+[\w.+-]*?)(?:[,)]|\s|$)")
_SGL_VER = re.compile(r"sglang(?:==|\s+version\s+|-)(?P<v>\d+\.\d+\.\d+[\w.]*)")
_GENERIC_VER = re.compile(r"\b(?P<name>sglang|vllm|lmdeploy|tensorrt_llm|text-generation-inference)[ =:-]+v?(?P<v>\d+\.\d+(?:\.\d+)?[\w.+]*)", re.I)


def detect(records: list[Record], hint: str = "auto") -> tuple[str, str | None]:
    """Return (engine, version or None); engine 'unknown' when nothing points anywhere."""
    votes = {e: 0 for e in ENGINES}
    version: dict[str, str] = {}
    for r in records:
        if r.prefix_engine in votes:
            votes[r.prefix_engine] += 3
        msg = r.msg
        for eng, sigs in _SIGS.items():
            for s in sigs:
                if s in msg:
                    votes[eng] += 2
                    break
        if "version" in msg or "LLM engine (v" in msg:
            m = _VLLM_VER.search(msg)
            if m:
                version.setdefault("vllm", m.group("v").rstrip(".,"))
        if "sglang" in msg.lower():
            m = _SGL_VER.search(msg)
            if m:
                version.setdefault("sglang", m.group("v"))
        m = _GENERIC_VER.search(msg) if "==" in msg or "version" in msg.lower() else None
        if m:
            name = m.group("name").lower().replace("tensorrt_llm", "trtllm").replace("text-generation-inference", "tgi")
            version.setdefault(name, m.group("v"))
    if hint and hint != "auto":
        return hint, version.get(hint) or _infer_version(hint, records)
    best = max(votes, key=lambda e: votes[e])
    if votes[best] == 0:
        return "unknown", None
    return best, version.get(best) or _infer_version(best, records)


def _infer_version(engine: str, records: list[Record]) -> str | None:
    """SGLang often prints no version; its wording dates it (engines.md §A)."""
    if engine != "sglang":
        return None
    best = None
    for r in records:
        m = r.msg
        if m.startswith("server_args={"):
            return ">=0.5.23"
        if m.startswith("Init parallel "):
            best = ">=0.5.22"
        elif best is None and (_SGL_017.search(m)):
            best = ">=0.5.17"
    return best


# wordings SGLang introduced in 0.5.17 (engines.md §A, §C): per-runner graph lines and the renamed graph flags
_SGL_017 = re.compile(r"CUDA graph begin\. backend=|Capture (?:target|draft) (?:decode|verify|extend|prefill) CUDA graph|"
                      r"--cuda-graph-max-bs-decode|--cuda-graph-backend-(?:decode|prefill)|Initialized DFLASH draft runner")
