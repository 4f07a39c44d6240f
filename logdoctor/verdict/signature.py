"""Which failures are the same failure: defined once, read by the history (crossattempt: "the same error as the
earlier attempt") and by triage (its signature column and group-by).

The error of an attempt is its first fatal block's root exception line, else the verdict's first evidence line, else
its death line (`error_text`); its template is that line masked (`mask`). The history keys an attempt by the hash of
the template (`history_key`); triage's signature adds the cause, the deciding rule and the top engine frames:
signature = cause + deciding rule + the masked template of the inner error + the top engine frames.
Masking removes what differs between two occurrences of one crash (numbers, sizes, paths, addresses, PIDs, ranks,
devices, hosts, ports); the engine frames (file basename + function, no line numbers, which move between versions)
keep two unrelated crashes with the same exception text apart. How the granularity was checked on our fixtures is in
docs/triage.md and tests/test_triage_signatures.py.
"""

from __future__ import annotations

from logdoctor.core import rxcache
from logdoctor.engines import each
from logdoctor.timeline.decisive import is_fatal_block

# order matters: the wider shapes first, so a path's digits are not masked one by one
_MASKS = tuple(
    (rxcache.compile(p), r)
    for p, r in (
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
    )
)
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


def first_fatal(a):
    """The attempt's first fatal block (a traceback ending in an exception, or an abort), or None."""
    fatal = [b for b in a.blocks if is_fatal_block(b)]
    return min(fatal, key=lambda b: b.first_line) if fatal else None


def error_text(a, evidence: str | None = None) -> str:
    """The line that says what failed: the first fatal block's root exception, else the verdict's first evidence
    line (when there is a verdict), else the attempt's death line; "" when the attempt shows none."""
    blk = first_fatal(a)
    if blk is not None and blk.root is not None:
        s = blk.root
        text = (f"{s.exc_type}: {s.exc_msg}" if s.exc_type else s.exc_msg or "").split("\n")[0]
        if text:
            return text
    if evidence:
        return evidence
    death = next((e for e in a.events if e.kind == "death"), None)
    return death.text if death and death.text else ""


def template(a, evidence: str | None = None) -> tuple[str, list[str]]:
    """The masked error line and engine frames a failure's identity is built from."""
    return mask(error_text(a, evidence)), engine_frames(first_fatal(a))


def history_key(a) -> str | None:
    """The history's "same error" key of an attempt: 12 hex of the hash of its masked error line; None when the
    attempt shows no error."""
    text = error_text(a)
    return _sha1(mask(text).encode("utf-8", "replace")).hexdigest()[:12] if text else None


def signature(cause: str | None, rule: str | None, template: str, frames: list[str]) -> str:
    """Triage's short stable id: cause + 8 hex of the hash of (rule, template, frames)."""
    key = "\x1f".join([cause or "unknown", rule or "-", template, "|".join(frames)])
    return f"{cause or 'unknown'}:{_sha1(key.encode()).hexdigest()[:8]}"


def _sha1(data: bytes):
    """sha1 (a fingerprint, not security) from the builtin module: hashlib would load OpenSSL on explain's path."""
    try:
        from _sha1 import sha1
    except ImportError:  # pragma: no cover - an interpreter without the builtin modules
        from hashlib import sha1
    return sha1(data, usedforsecurity=False)
