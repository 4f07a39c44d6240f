"""The concept lexicon: the cause a message names, from the engine's own words (the exception class and phrases
such as "must be divisible by" or "not supported on <GPU>"). Rows are tried in order; the first that matches names
the cause. A message no row places gets cause "unknown": the atlas then tells the phase and the source, never a
guessed cause.

Each row: (cause, exception classes it applies to or () for any, phases it needs or () for any, pattern). Patterns
are read against the log line itself, so a formatted value (the GPU name, "sm_75") counts too.
"""

from __future__ import annotations

import re
from typing import Final

_GPU = (
    r"(?:GPUs?|devices?|platforms?|hardware|architectures?|arch|compute capability|CUDA arch|SM ?\d+|sm_?\d+"
    r"|Volta|Turing|Ampere|Hopper|Blackwell|Ada|V100|T4|A100|A10G?|L4|L40S?|H100|H200|H20|B200|B100|GB200"
    r"|MI\d{3}|ROCm|AMD|XPU|TPU|NPU|GeForce|RTX|Tesla)\b"
)

LEXICON: Final[tuple[tuple[str, tuple[str, ...], tuple[str, ...], re.Pattern[str]], ...]] = (
    # a kernel / backend that this GPU generation cannot run
    (
        "kernel_arch_mismatch",
        (),
        (),
        re.compile(
            r"(?:not|only|un|n't) ?supported (?:on|for|by) (?:this |the |your |current |the current )?"
            + _GPU
            + r"|(?:does|do)(?: not|n't) support (?:this |the |your |current )?"
            + _GPU
            + r"|requires? (?:a |an )?(?:GPU|device)s? with (?:compute capability|sm)|compute capability (?:>=|of at least)"
            r"|requires? (?:sm_?\d+|SM ?(?:>=|>|≥)? ?\d+|Hopper|Blackwell|Ampere|Ada)|sm_?\d+ (?:or|and) (?:above|higher|newer|later)"
            r"|only supports? (?:sm|SM ?\d|Hopper|Blackwell|Ampere)"
        ),
    ),
    # the toolchain a JIT build needs is missing or failed
    (
        "kernel_arch_mismatch",
        (),
        (),
        re.compile(
            r"Python\.h|fatal error: \S+\.h: No such file|nvcc(?: not found|: fatal| fatal)|[Ff]ailed to compile"
            r"|[Cc]ompilation (?:failed|error)|CompilationError|undefined symbol|no kernel image is available"
        ),
    ),
    # two features or values the engine's own argument checks reject
    (
        "config_invalid",
        (),
        (),
        re.compile(
            r"(?:must|should) be divisible by|is not divisible by|must be a multiple of"
            r"|(?:does|do) not support|doesn't support|is not supported (?:with|when|together|in combination)"
            r"|are not supported together|(?:cannot|can't|can not) be (?:used|enabled|combined|set) (?:with|together)"
            r"|is (?:in|not )compatible with|are mutually exclusive|[Oo]nly one of"
            r"|(?:must|should) be (?:greater|less|smaller|larger|positive|non-negative|at least|at most|between|one of)"
            r"|[Ii]nvalid (?:value|argument|choice)|is greater than the derived|is not a valid (?:choice|option|value)"
        ),
    ),
    # the model, its config or tokenizer cannot be found or read
    (
        "model_load_error",
        (),
        ("launch", "weight_load"),
        re.compile(
            r"(?:[Cc]annot|[Cc]an't|[Cc]ould not|[Uu]nable to|[Ff]ailed to) (?:find|load|locate|open) (?:the )?"
            r"(?:model|tokenizer|config|checkpoint|weights?|safetensors)"
            r"|[Uu]nrecognized (?:model|configuration)|is not a (?:valid|local) (?:model|folder|directory)"
            r"|gated repo|Repository Not Found|(?:model|checkpoint|weights?) (?:file |path )?(?:does not exist|not found)"
        ),
    ),
    # the memory left after the weights does not hold the pool
    (
        "kv_cache_oom",
        (),
        ("memory_pool",),
        re.compile(r"(?:[Nn]ot enough|[Nn]o available|[Ii]nsufficient) (?:GPU )?(?:memory|space)"),
    ),
    (
        "port_in_use",
        (),
        (),
        re.compile(r"[Aa]ddress already in use|port \S+ is (?:already )?in use|port is (?:already )?in use"),
    ),
)


def cause_of(text: str, exc: str | None, phase: str) -> tuple[str, str]:
    """(cause, the words that named it) for a message line; ("unknown", "") when no row places it."""
    for cause, classes, phases, pat in LEXICON:
        if classes and exc not in classes:
            continue
        if phases and phase not in phases:
            continue
        m = pat.search(text)
        if m:
            return cause, m.group(0)
    return "unknown", ""
