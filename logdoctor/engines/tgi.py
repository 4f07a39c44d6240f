"""Hugging Face Text Generation Inference: basic markers, enough to detect the engine and place the big phases."""

from __future__ import annotations

from logdoctor.engines.engine import Engine
from logdoctor.engines.markers import Marker

NAME = "tgi"
SIGNATURES = ("text_generation_launcher", "text_generation_server", "text-generation-launcher", "shard-manager")

MARKERS: tuple[Marker, ...] = (
    Marker("tgi_args", r"^Args \{", "launch", "config", keyword="Args"),
    Marker(
        "tgi_shard_start",
        r"Starting shard|Starting download process|Waiting for shard to be ready",
        "weight_load",
        "begin",
        keyword="hard",
    ),
    Marker("tgi_shard_ready", r"Shard ready in|Shard \d+ ready", "weight_load", "end", then="warmup", keyword="ready"),
    Marker("tgi_warmup", r"Warming up model", "warmup", "begin", keyword="Warming up"),
    Marker("tgi_cuda_graphs", r"Cuda Graphs are enabled for sizes", "graph_capture", keyword="Cuda Graphs"),
    Marker(
        "tgi_ready",
        r"Connected$|Invalid hostname, defaulting to|Serving revision",
        "serving",
        "ready",
        keyword="onnected",
    ),
)

ENGINE = Engine(
    name=NAME,
    title="TGI",
    signatures=SIGNATURES,
    markers=MARKERS,
    banner_names=("text-generation-inference",),
    launch_pattern=r"text-generation-launcher",
    command_words=("text-generation-launcher",),
    package_dirs=("text_generation_server",),
    process_names=("text-generation",),
    unit_words=("tgi", "text-generation"),
)
