"""Failure signatures: which failures are the same failure.

signature = cause + deciding rule + the masked template of the inner error + the top engine frames.
Masking removes what differs between two occurrences of one crash (numbers, sizes, paths, addresses, PIDs, ranks,
devices, hosts, ports); the engine frames (file basename + function, no line numbers, which move between versions)
keep two unrelated crashes with the same exception text apart. How the granularity was checked on our fixtures is in
docs/triage.md and tests/test_triage_signatures.py.
"""
from __future__ import annotations

import hashlib
import re

from logdoctor.engines import each

# order matters: the wider shapes first, so a path's digits are not masked one by one
_MASKS: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p), r) for p, r in (
    (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
    (r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:/[\w.@+=,-]+){2,}/?", "<path>"),
    (r"\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b", "<pci>"),
    (r"\b0x[0-9a-fA-F]+\b", "<addr>"),
    (r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b", "<ip>"),
    (r"\[?::1\]?:\d+|\blocalhost:\d+", "<ip>"),
    (r"(?i)\b\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes?|B)\b", "<size>"),
    (r"\b(TP|DP|PP|EP|CP)\d+\b", r"\1<n>"),
    (r"(?i)\b(rank|local_rank|device|gpu|ordinal|pid|tid|port|worker|node)(\s*[=:#]?\s*)\d+", r"\1\2<n>"),
    (r"(?i)\bcuda:\d+", "cuda:<n>"),
    (r"\b[0-9a-f]{12,}\b", "<hex>"),
    (r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b", "<n>"),
    (r"'[^']{40,}'", "'<text>'"),
    (r"\s+", " "),
))
# kernel libraries the engines call into: their frames say where a crash happened as much as the engine's own
KERNEL_DIRS = ("flashinfer/", "deep_ep/", "torch/")
ENGINE_DIRS = tuple(f"{d}/" for d in each("package_dirs")) + KERNEL_DIRS
TOP_FRAMES = 3


def mask(text: str) -> str:
    """The template of an error message: variable parts replaced by placeholders."""
    t = text.strip()
    for rx, rep in _MASKS:
        t = rx.sub(rep, t)
    return t[:240].strip()


def engine_frames(block) -> list[str]:
    """The innermost engine frames of a traceback block as 'file.py:function' (no line numbers)."""
    if block is None:
        return []
    frames = [fr for sec in block.sections for fr in sec.frames]
    own = [fr for fr in frames if any(d in fr.file for d in ENGINE_DIRS)]
    return [f"{fr.basename}:{fr.func}" for fr in own[-TOP_FRAMES:]]


def signature(cause: str | None, rule: str | None, template: str, frames: list[str]) -> str:
    """A short stable id: cause + 8 hex of the hash of (rule, template, frames)."""
    key = "\x1f".join([cause or "unknown", rule or "-", template, "|".join(frames)])
    return f"{cause or 'unknown'}:{hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:8]}"
