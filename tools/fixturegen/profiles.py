"""Hardware and model facts the emitters draw numbers from."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    key: str
    name: str          # torch.cuda.get_device_name()
    label: str         # how a label names it ("H100 80GB")
    total: float       # GiB as torch reports it
    sm: int            # compute capability, e.g. 90
    nvlink: bool = True


GPUS = {g.key: g for g in [
    Gpu("H100", "NVIDIA H100 80GB HBM3", "H100 80GB", 79.19, 90),
    Gpu("H200", "NVIDIA H200", "H200 141GB", 139.81, 90),
    Gpu("A100", "NVIDIA A100-SXM4-80GB", "A100 80GB", 79.15, 80),
    Gpu("A100-40", "NVIDIA A100-SXM4-40GB", "A100 40GB", 39.39, 80),
    Gpu("L40S", "NVIDIA L40S", "L40S 48GB", 44.42, 89, nvlink=False),
    Gpu("B200", "NVIDIA B200", "B200 180GB", 178.36, 100),
    Gpu("RTX6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 96GB", 94.97, 120, nvlink=False),
    Gpu("T4", "Tesla T4", "T4 16GB", 14.58, 75, nvlink=False),
    Gpu("V100", "Tesla V100-SXM2-32GB", "V100 32GB", 31.74, 70),
]}


@dataclass(frozen=True)
class Model:
    key: str
    repo: str          # HF id
    arch: str          # architectures[0]
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    size_gb: float     # checkpoint size (GB) as loaded
    shards: int
    ctx: int           # max_position_embeddings / derived context length
    dtype: str = "bfloat16"
    kind: str = "dense"          # dense | moe | gdn (hybrid linear attention) | mla | swa | vl
    quant: str | None = None
    sg_module: str = "llama"     # sglang.srt.models.<module>
    vl_module: str = "llama"     # vllm.model_executor.models.<module>

    @property
    def name(self) -> str:
        return self.repo.split("/")[-1]

    def kv_bytes_per_token(self, tp: int) -> int:
        """K+V bytes per token per rank (bf16)."""
        if self.kind == "mla":
            return self.layers * (512 + 64) * 2
        full = self.layers // 4 if self.kind == "gdn" else self.layers
        kvh = max(1, self.kv_heads // tp)
        return 2 * full * kvh * self.head_dim * 2


MODELS = {m.key: m for m in [
    Model("llama8b", "meta-llama/Llama-3.1-8B-Instruct", "LlamaForCausalLM", 32, 32, 8, 128, 16.07, 4, 131072),
    Model("llama70b", "meta-llama/Llama-3.3-70B-Instruct", "LlamaForCausalLM", 80, 64, 8, 128, 141.1, 30, 131072),
    Model("qwen25-7b", "Qwen/Qwen2.5-7B-Instruct", "Qwen2ForCausalLM", 28, 28, 4, 128, 15.23, 4, 32768,
          sg_module="qwen2", vl_module="qwen2"),
    Model("qwen25-32b", "Qwen/Qwen2.5-32B-Instruct", "Qwen2ForCausalLM", 64, 40, 8, 128, 65.53, 17, 32768,
          sg_module="qwen2", vl_module="qwen2"),
    Model("qwen25-72b", "Qwen/Qwen2.5-72B-Instruct", "Qwen2ForCausalLM", 80, 64, 8, 128, 145.4, 37, 32768,
          sg_module="qwen2", vl_module="qwen2"),
    Model("qwen3-8b", "Qwen/Qwen3-8B", "Qwen3ForCausalLM", 36, 32, 8, 128, 16.38, 5, 40960,
          sg_module="qwen3", vl_module="qwen3"),
    Model("qwen3-32b", "Qwen/Qwen3-32B", "Qwen3ForCausalLM", 64, 64, 8, 128, 65.52, 17, 40960,
          sg_module="qwen3", vl_module="qwen3"),
    Model("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3MoeForCausalLM", 48, 32, 4, 128, 61.07, 16,
          262144, kind="moe", sg_module="qwen3_moe", vl_module="qwen3_moe"),
    Model("qwen3-coder-30b", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "Qwen3MoeForCausalLM", 48, 32, 4, 128, 61.07, 16,
          262144, kind="moe", sg_module="qwen3_moe", vl_module="qwen3_moe"),
    Model("qwen3-235b-fp8", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen3MoeForCausalLM", 94, 64, 4, 128,
          236.4, 24, 262144, kind="moe", quant="fp8", sg_module="qwen3_moe", vl_module="qwen3_moe"),
    Model("qwen3-next", "Qwen/Qwen3-Next-80B-A3B-Instruct", "Qwen3NextForCausalLM", 48, 16, 2, 256, 162.7, 41,
          262144, kind="gdn", sg_module="qwen3_next", vl_module="qwen3_next"),
    Model("qwen3-next-fp8", "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8", "Qwen3NextForCausalLM", 48, 16, 2, 256, 82.3,
          9, 262144, kind="gdn", quant="fp8", sg_module="qwen3_next", vl_module="qwen3_next"),
    Model("qwen3-next-think", "Qwen/Qwen3-Next-80B-A3B-Thinking", "Qwen3NextForCausalLM", 48, 16, 2, 256, 162.7,
          41, 262144, kind="gdn", sg_module="qwen3_next", vl_module="qwen3_next"),
    Model("mistral24b", "mistralai/Mistral-Small-24B-Instruct-2501", "MistralForCausalLM", 40, 32, 8, 128, 47.14,
          10, 32768, sg_module="mistral", vl_module="llama"),
    Model("gemma3-27b", "google/gemma-3-27b-it", "Gemma3ForConditionalGeneration", 62, 32, 16, 128, 54.87, 12,
          131072, kind="swa", sg_module="gemma3_mm", vl_module="gemma3_mm"),
    Model("ds-v3", "deepseek-ai/DeepSeek-V3-0324", "DeepseekV3ForCausalLM", 61, 128, 128, 192, 641.3, 163,
          163840, kind="mla", quant="fp8", sg_module="deepseek_v2", vl_module="deepseek_v2"),
    Model("ds-v2-lite", "deepseek-ai/DeepSeek-V2-Lite-Chat", "DeepseekV2ForCausalLM", 27, 16, 16, 192, 31.41, 4,
          163840, kind="mla", sg_module="deepseek_v2", vl_module="deepseek_v2"),
    Model("glm46-fp8", "zai-org/GLM-4.6-FP8", "Glm4MoeForCausalLM", 92, 96, 8, 128, 354.9, 93, 202752,
          kind="moe", quant="fp8", sg_module="glm4_moe", vl_module="glm4_moe"),
    Model("gpt-oss-120b", "openai/gpt-oss-120b", "GptOssForCausalLM", 36, 64, 8, 64, 65.25, 15, 131072,
          kind="swa", quant="mxfp4", sg_module="gpt_oss", vl_module="gpt_oss"),
    Model("gpt-oss-20b", "openai/gpt-oss-20b", "GptOssForCausalLM", 24, 64, 8, 64, 13.76, 3, 131072,
          kind="swa", quant="mxfp4", sg_module="gpt_oss", vl_module="gpt_oss"),
    Model("phi4", "microsoft/phi-4", "Phi3ForCausalLM", 40, 40, 10, 128, 29.32, 6, 16384,
          sg_module="phi3", vl_module="phi3"),
    Model("qwen25-vl-7b", "Qwen/Qwen2.5-VL-7B-Instruct", "Qwen2_5_VLForConditionalGeneration", 28, 28, 4, 128,
          16.58, 5, 128000, kind="vl", sg_module="qwen2_5_vl", vl_module="qwen2_5_vl"),
    Model("qwen25-vl-72b", "Qwen/Qwen2.5-VL-72B-Instruct", "Qwen2_5_VLForConditionalGeneration", 80, 64, 8, 128,
          146.8, 38, 128000, kind="vl", sg_module="qwen2_5_vl", vl_module="qwen2_5_vl"),
    Model("llama4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama4ForConditionalGeneration", 48, 40,
          8, 128, 217.6, 50, 10485760, kind="moe", sg_module="llama4", vl_module="mllama4"),
    Model("minimax-m2", "MiniMaxAI/MiniMax-M2", "MiniMaxM2ForCausalLM", 62, 48, 8, 128, 230.1, 130, 196608,
          kind="moe", quant="fp8", sg_module="minimax_m2", vl_module="minimax_m2"),
    Model("mistral7b", "mistralai/Mistral-7B-Instruct-v0.2", "MistralForCausalLM", 32, 32, 8, 128, 14.48, 3, 32768,
          sg_module="llama", vl_module="llama"),
    Model("phi35-mini", "microsoft/Phi-3.5-mini-instruct", "Phi3ForCausalLM", 32, 32, 32, 96, 7.64, 2, 131072,
          sg_module="phi3", vl_module="phi3"),
    Model("qwen2-72b", "Qwen/Qwen2-72B-Instruct", "Qwen2ForCausalLM", 80, 64, 8, 128, 145.4, 37, 32768,
          sg_module="qwen2", vl_module="qwen2"),
]}


# where a model lives on disk, by site convention
def model_path(m: Model, style: int) -> str:
    return [
        m.repo,
        f"/models/{m.name}",
        f"/data/hf/{m.name}",
        f"/mnt/weights/{m.name.lower()}",
        f"/srv/llm/{m.repo.replace('/', '--')}",
    ][style % 5]


SITE_PACKAGES = [
    "/usr/local/lib/python3.12/dist-packages",
    "/opt/venv/lib/python3.11/site-packages",
    "/usr/local/lib/python3.10/dist-packages",
    "/opt/conda/lib/python3.11/site-packages",
    "/srv/inference/.venv/lib/python3.12/site-packages",
]
