"""The command to check: a unit file's ExecStart= or a command after `--`, read by the same config code explain uses.

Why the same code: a flag preflight reads differently from explain would make the two disagree about the value in
force, and the planner would propose a value explain calls "already in force"."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.core.errors import InputError, UsageError

SUPPORTED = ("sglang", "vllm")


@dataclass
class Launch:
    """The launch command reduced to what the budget needs."""

    engine: str
    raw: dict[str, object]  # the engine's field names -> values, as explain's config has them
    levers: dict[str, object]  # canonical levers (levers.py), defaults filled
    env: dict[str, str] = field(default_factory=dict)
    model_path: str | None = None
    text: str = ""
    unit: str | None = None


def from_unit_file(path: str, engine: str | None = None) -> Launch:
    """The command systemd would run: the unit and its drop-ins (`UNIT.d/*.conf`, e.g. the one `fix --write`
    writes), read as `fix` reads them, so a fixed unit is checked with its fix in force."""
    from logdoctor.hook.unitfile import command_in_force, load_unit

    if not Path(path).exists():
        raise InputError(f"{path}: no such file")
    us = load_unit(path)
    text, cmd = command_in_force(us, engine)
    launch = from_text(text[cmd.start : cmd.end], engine)
    launch.unit = us.name if us.name.endswith(".service") else None
    return launch


def from_argv(argv: list[str], engine: str | None = None) -> Launch:
    import shlex

    if not argv:
        raise UsageError(
            "no command: give a UNIT_FILE or `-- python -m sglang.launch_server ...` / `-- vllm serve ...`"
        )
    return from_text(" ".join(shlex.quote(a) for a in argv), engine)


def from_text(text: str, engine: str | None = None) -> Launch:
    from logdoctor.engines import levers
    from logdoctor.engines.config_dump import parse_command_line

    c = parse_command_line(text.replace("\\\n", " "), engine)
    eng = (engine or c.engine or "").lower()
    if eng not in SUPPORTED:
        raise UsageError(
            f"preflight knows the memory accounting of {' and '.join(SUPPORTED)}; the command is "
            f"{'for ' + eng if eng else 'not an engine launch this tool recognises'} (use --engine)"
        )
    raw = dict(c.args)
    model = raw.get("model_path") or raw.get("model")
    if model is None and eng == "vllm" and c.positionals:
        pos = [p for p in c.positionals if p != "serve"]
        model = pos[0] if pos else None
    return Launch(
        eng,
        raw,
        levers.levers_from_config(eng, None, raw, fill_defaults=True),
        dict(c.env),
        str(model) if model else None,
        text,
    )
