"""Defects in the engine's own code: a programming error raised in the engine's frames with no resource, hardware,
distributed or configuration signal around it.

An AttributeError / TypeError / KeyError / AssertionError / NotImplementedError / IndexError raised inside
sglang/vllm code is a software defect or an unsupported combination of features. It is not memory, so it must not be
forced into kv_cache_oom or a memory flag: the verdict is `cause: unknown`, the explanation names the failing function
and the feature flags in force that lead to it, and the actions are "upgrade, or turn the feature off, and report
with the traceback". A config rule that the log itself backs (a combination the engine says is unsupported) still wins.
"""

from __future__ import annotations

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.timeline.decisive import ENGINE_FILE

DEFECT_TYPES = rxcache.compile(
    r"(?:^|\.)(?:AttributeError|TypeError|KeyError|AssertionError|NotImplementedError|IndexError|"
    r"UnboundLocalError|NameError)$"
)
# anything that points at a resource, the hardware, the distributed layer, the build or the configuration instead
_SIGNAL = rxcache.compile(
    r"out of memory|OutOfMemory|CUDA error|CUDA_ERROR|cudaError|NCCL|nccl|[Gg]loo|ProcessGroup|"
    r"illegal memory|ECC|Xid|device-side assert|no kernel image|undefined symbol|ImportError|"
    r"ModuleNotFoundError|must be divisible|is not supported|not supported|unsupported|Unsupported|"
    r"invalid choice|argument --|Killed|SIGKILL|timed? ?out|Timeout|[Ee]rrno|Address already in use|"
    r"No such file|does not appear to have|safetensors|SafetensorError|not a valid model"
)
# feature switches worth naming when a defect shows up (the combination is usually the trigger)
# (only opt-in switches: SGLang's server_args dump prints every field, defaults included)
_FEATURE = rxcache.compile(
    r"^(?:speculative_(?:algorithm|config|method)|spec_method|enable_\w+|structured_outputs_config|"
    r"guided_decoding_backend|kv_cache_dtype|quantization|disaggregation_mode|lora_paths|"
    r"tool_call_parser|reasoning_parser)$"
)
_DEFAULTISH = {None, False, "", "auto", "none", "None", "disabled", "full"}


@dataclass
class Defect:
    """An engine bug's signature: the exception and the engine frame it was raised in."""

    exc: str  # "AttributeError: 'NoneType' object has no attribute 'new_empty'"
    line: int
    func: str
    file: str
    features: list[str] = field(default_factory=list)

    def explanation(self, engine: str) -> str:
        feats = f" with {', '.join(self.features)} in force" if self.features else ""
        return (
            f"{engine} raised {self.exc.split(':')[0]} in its own code ({self.func} in {self.file}){feats}. "
            "Nothing in the window points at memory, the GPU, the distributed setup or a rejected argument: "
            "this is a defect in the engine or a combination of features it does not support. A memory or "
            "graph flag will not help."
        )

    def actions(self, engine: str) -> list[str]:
        off = f" (try without {', '.join(self.features[:2])})" if self.features else ""
        return [
            f"upgrade {engine}, or turn the feature off{off}, and report it with the traceback",
            "keep the full traceback: journalctl -u UNIT -n 1000 --no-pager",
        ]


def features_in_force(raw: dict) -> list[str]:
    out = []
    for k, v in sorted(raw.items(), key=lambda kv: not kv[0].startswith("spec")):
        if (
            not _FEATURE.match(k)
            or (isinstance(v, (dict, list)) and not v)
            or (not isinstance(v, (dict, list)) and v in _DEFAULTISH)
        ):
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            out.append(flag)
        elif isinstance(v, dict):
            main = v.get("method") or v.get("backend") or next(iter(v.values()), "")
            out.append(f"{flag} {main}".strip())
        else:
            out.append(f"{flag} {v}")
    return out[:5]


def engine_defect(a) -> Defect | None:
    """The attempt's decisive error is a programming error in the engine's frames, with no other signal."""
    dec = a.decisive
    if dec is None or not dec.fatal:
        return None
    blocks = sorted(dec.fatal, key=lambda b: b.first_line)
    b = blocks[0]
    secs = [s for s in b.sections if s.exc_type]
    if not secs:
        return None
    root = secs[0]
    if not DEFECT_TYPES.search(root.exc_type):
        return None
    frames = [f for f in reversed(root.frames) if ENGINE_FILE.search(f.file)]
    if not frames or not ENGINE_FILE.search(root.frames[-1].file):
        return None  # raised in torch / a library: not (visibly) the engine's own code
    texts = [t for _, t in dec.errors] + [e.text for e in a.kernel if not e.values.get("foreign")]
    if any(_SIGNAL.search(t or "") for t in texts):
        return None
    if (
        any(k in a.systemd for k in ("oom", "timeout"))
        or a.systemd.get("code") == "killed"
        and a.systemd.get("status") == "9"
        and not any(e.kind == "death" for e in a.events)
    ):
        return None
    f = frames[0]
    return Defect(
        exc=f"{root.exc_type}: {root.exc_msg}".splitlines()[0],
        line=root.exc_line or b.first_line,
        func=f.func,
        file=f.basename,
        features=features_in_force(a.config.raw),
    )
