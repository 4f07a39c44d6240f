"""`logdoctor preflight UNIT_FILE | [options] -- COMMAND ...`: before the start, the memory budget and the host's
health -> go / no-go / risky (docs/preflight.md).

Exit codes: 0 go · 1 no-go with a known cause · 3 risky · 2 usage or input error (one line on stderr)."""

from __future__ import annotations

import sys

import click

from logdoctor.cli.commands.history import history_options, open_from_options
from logdoctor.preflight.inputs import SUPPORTED  # the engines the preflight memory model covers


@click.command("preflight", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="UNIT_FILE | -- COMMAND ...")
@click.option("--engine", type=click.Choice(["auto", *SUPPORTED]), default="auto", show_default=True)
@click.option("--model-config", help="config.json or a model folder (else the command's local --model-path)")
@click.option("--draft-config", help="the speculative draft model's config.json or folder")
@click.option("--nvidia-smi-xml", help="`nvidia-smi -q -x` output of the target host (else live NVML)")
@click.option("--gpu-memory", help="each GPU's memory, e.g. 80GiB or 143771MiB (with --gpus)")
@click.option("--gpus", type=int, help="number of GPUs (with --gpu-memory)")
@click.option("--kernel-log", help="the host's kernel log (else journalctl -k)")
@click.option("--no-kernel-log", is_flag=True, help="do not read the kernel log")
@click.option("--host", help="host name for the attempt history (default: this host)")
@click.option("--engine-version", "version", help="engine version, for version-specific constants")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@history_options
def preflight_cmd(
    args,
    engine,
    model_config,
    draft_config,
    nvidia_smi_xml,
    gpu_memory,
    gpus,
    kernel_log,
    no_kernel_log,
    host,
    version,
    fmt,
    history_path,
    no_history,
):
    """Predict, before the start, whether the weights, the KV pool and CUDA-graph capture fit on these GPUs, and
    whether the host is sound.

    \b
    Examples:
      logdoctor preflight sglang-qwen.service --nvidia-smi-xml host.xml --kernel-log kern.log
      logdoctor preflight --gpu-memory 141GiB --gpus 2 -- python -m sglang.launch_server --model-path /m/Qwen3 --tp 2
      logdoctor preflight --model-config ./llama/config.json --gpu-memory 80GiB --gpus 1 -- vllm serve meta-llama/Llama-3.1-8B

    Exit codes: 0 go · 1 no-go with a known cause · 3 risky · 2 usage or input error."""
    from logdoctor.core.errors import UsageError
    from logdoctor.preflight import run
    from logdoctor.preflight.render import to_json, to_text

    argv = list(args)
    unit_file = None
    if "--" not in sys.argv[1:]:  # click drops the `--`; without one the only argument is a unit file
        if len(argv) > 1:
            raise UsageError(f"unexpected {argv[1]!r}: give one UNIT_FILE, or the command after `--`")
        unit_file, argv = (argv[0] if argv else None), []
    if unit_file is None and not argv:
        raise UsageError("no command: give a UNIT_FILE or `-- COMMAND ...`")
    store = open_from_options(history_path, no_history)
    rep = run(
        unit_file=unit_file,
        argv=argv or None,
        engine=None if engine == "auto" else engine,
        model_config=model_config,
        draft_config=draft_config,
        nvidia_smi_xml=nvidia_smi_xml,
        gpu_memory=gpu_memory,
        gpus=gpus,
        kernel_log=kernel_log,
        no_kernel_log=no_kernel_log,
        history=store,
        host=host,
        version=version,
    )
    click.echo(to_json(rep) if fmt == "json" else to_text(rep), nl=fmt == "json")
    sys.exit(rep.exit_code)
