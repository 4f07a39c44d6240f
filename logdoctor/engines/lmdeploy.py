"""lmdeploy (TurboMind / PyTorch backends): basic markers, enough to detect the engine and place the big phases."""

from __future__ import annotations

from logdoctor.engines.engine import Engine
from logdoctor.engines.markers import Marker

NAME = "lmdeploy"
SIGNATURES = ("lmdeploy", "turbomind")

MARKERS: tuple[Marker, ...] = (
    Marker("lmd_build", r"build (?:model|TurboMind)|Loading weights", "weight_load", "begin", keyword="oad"),
    Marker("lmd_cache", r"(?:block_count|cache_max_entry_count|num_gpu_blocks)", "memory_pool", keyword="block"),
    Marker("lmd_ready", r"Uvicorn running on|Application startup complete", "serving", "ready", keyword="running"),
)

ENGINE = Engine(
    name=NAME,
    title="lmdeploy",
    signatures=SIGNATURES,
    markers=MARKERS,
    banner_names=("lmdeploy",),
    launch_pattern=r"lmdeploy serve",
    command_words=("lmdeploy",),
    package_dirs=("lmdeploy",),
    process_names=("lmdeploy",),
    unit_words=("lmdeploy",),
)
