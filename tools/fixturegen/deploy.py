"""One start of a service: engine, version, model, GPUs and the flags in force."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .profiles import GPUS, MODELS, SITE_PACKAGES, Gpu, Model, model_path


def vtuple(v: str) -> tuple[int, ...]:
    out = []
    for p in v.split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        if digits == "":
            break
        out.append(int(digits))
        if not p.isdigit():
            break
    return tuple(out)


@dataclass
class Deploy:
    engine: str                     # sglang | vllm | tgi | trtllm | lmdeploy
    version: str
    model_key: str
    gpu_key: str
    tp: int = 1
    dp: int = 1
    pp: int = 1
    ep: int = 1
    args: dict = field(default_factory=dict)   # flags the user set (engine field names)
    path_style: int = 1
    site_style: int = 0
    port: int | None = None
    unit: str | None = None
    host: str | None = None
    draft: str | None = None        # speculative draft model path
    gpu_ids: tuple[int, ...] = ()   # which physical GPUs (for PCI ids / CUDA_VISIBLE_DEVICES)

    @property
    def model(self) -> Model:
        return MODELS[self.model_key]

    @property
    def gpu(self) -> Gpu:
        return GPUS[self.gpu_key]

    @property
    def v(self) -> tuple[int, ...]:
        return vtuple(self.version)

    @property
    def path(self) -> str:
        return self.args.get("model_path") or self.args.get("model") or model_path(self.model, self.path_style)

    @property
    def site(self) -> str:
        return SITE_PACKAGES[self.site_style % len(SITE_PACKAGES)]

    @property
    def py_minor(self) -> int:
        return int(self.site.split("python3.")[1].split("/")[0])

    @property
    def world(self) -> int:
        return self.tp * self.pp * (self.dp if self.engine == "vllm" else 1)

    @property
    def http_port(self) -> int:
        if self.port:
            return self.port
        return {"sglang": 30000, "vllm": 8000, "tgi": 80, "trtllm": 8000, "lmdeploy": 23333}[self.engine]

    def gpu_label(self) -> str:
        n = max(self.world, 1)
        return f"{n}x {self.gpu.label}" if n > 1 else f"1x {self.gpu.label}"

    def with_args(self, **kw) -> "Deploy":
        return replace(self, args={**self.args, **kw})

    def but(self, **kw) -> "Deploy":
        return replace(self, **kw)

    # memory model (GiB, per rank) ---------------------------------------
    def weights_gib(self) -> float:
        return self.model.size_gb * 0.9313 / max(self.tp * self.pp, 1)

    def ctx_overhead(self) -> float:
        return 0.55 + 0.12 * (self.tp > 1) + 0.03 * self.tp

    def pci(self, rank: int) -> str:
        ids = self.gpu_ids or tuple(range(8))
        bus = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb][ids[rank % len(ids)] % 8]
        return f"0000:{bus:02x}:00"
