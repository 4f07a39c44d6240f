"""Apply a verdict's fixes[0] to a launch command: a systemd unit's ExecStart=, a plain shell command line, or a
`docker run` command, changing only the flag's own bytes.

Why a hand-written scanner and not shlex: shlex loses the offsets. Here every argument keeps its byte span in the
original text, so an edit replaces exactly that span (or inserts one next to the last argument) and everything
else (other flags, quoting, backslash continuations, comments, Environment= lines, other sections) stays byte for
byte. The new file is named after the change (sglang-qwen.service → sglang-qwen-nograph.service) and its
Description= says what changed.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from logdoctor import levers as lv
from logdoctor.diagnosis import Diagnosis, FixStep
from logdoctor.engines import ENGINES
from logdoctor.errors import InputError, UsageError


class NothingToApply(UsageError):
    """The verdict has no flag-shaped change (hardware, unknown, an engine defect, no failure): exit 2."""


@dataclass
class Arg:
    value: str        # the argument after shell unquoting
    start: int        # byte span in the text (quotes included)
    end: int


@dataclass
class Command:
    kind: str         # "unit" | "docker" | "shell"
    start: int        # span of the command text inside the file (for a unit: after "ExecStart=")
    end: int
    args: list[Arg]


@dataclass
class Change:
    """What fix() did: the new text, a name for it, and the one-line summary."""

    text: str
    name: str
    summary: str
    kind: str


_EXEC = re.compile(r"^[ \t]*ExecStart[ \t]*=[ \t]*", re.M)
_SECTION = re.compile(r"^[ \t]*\[([^\]]+)\][ \t]*$", re.M)
# words that mark an engine launch command (engines/<name>.py command_words)
_ENGINE_CMD = re.compile("|".join(w for e in ENGINES.values() for w in e.command_words))
_SHORT = {"graphs_off": "nograph", "piecewise_graph_off": "nopiecewise", "mem_fraction": "mem", "context_length": "ctx",
          "max_running": "maxrun", "prefill_chunk": "chunk", "graph_max_bs": "graphbs", "tp_size": "tp",
          "attention_backend": "attn", "custom_all_reduce_off": "nocustomar", "torch_compile": "nocompile",
          "mamba_ratio": "mamba", "port": "port", "max_total_tokens": "maxtok", "max_prefill_tokens": "prefill"}


# ----------------------------------------------------------------------------------------------------------------
# scanning


def scan(text: str, start: int, end: int, *, unit: bool) -> list[Arg]:
    """Split text[start:end] into arguments with spans. Backslash-newline continues the line; inside a unit file a
    continued line that starts with # or ; is a comment (systemd ignores it)."""
    args: list[Arg] = []
    i = start
    cur: list[str] = []
    a_start = -1
    quote = ""
    line_start = True
    while i < end:
        c = text[i]
        if line_start and unit and not quote and not cur:
            j = i
            while j < end and text[j] in " \t":
                j += 1
            if j < end and text[j] in "#;":
                nl = text.find("\n", j)
                i = end if nl < 0 or nl >= end else nl + 1
                continue
            line_start = False
        if quote:
            if c == "\\" and quote == '"' and i + 1 < end and text[i + 1] in '"\\$`':
                cur.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = ""
            else:
                cur.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < end and text[i + 1] == "\n":
            if a_start >= 0:
                args.append(Arg("".join(cur), a_start, i))
                cur, a_start = [], -1
            i += 2
            line_start = True
            continue
        if c in " \t\n":
            if a_start >= 0:
                args.append(Arg("".join(cur), a_start, i))
                cur, a_start = [], -1
            if c == "\n":
                break       # an unescaped newline ends the command
            i += 1
            continue
        if a_start < 0:
            a_start = i
        if c in "'\"":
            quote = c
        elif c == "\\" and i + 1 < end:
            cur.append(text[i + 1])
            i += 2
            continue
        else:
            cur.append(c)
        i += 1
    if a_start >= 0:
        args.append(Arg("".join(cur), a_start, i))
    return args


def _command_end(text: str, start: int, *, unit: bool = False) -> int:
    """End of a (possibly continued) command starting at start: the first newline not escaped by a backslash. In a
    unit file a comment line inside the continuation neither ends it nor continues it (systemd skips it)."""
    i = start
    first = True
    while True:
        nl = text.find("\n", i)
        if nl < 0:
            return len(text)
        line = text[i:nl]
        if unit and not first and line.lstrip().startswith(("#", ";")):
            i = nl + 1
            continue
        first = False
        if line.rstrip(" \t\r").endswith("\\"):
            i = nl + 1
            continue
        return nl


def find_command(text: str) -> Command:
    """The engine's launch command in a unit file, a shell command line or a docker run command."""
    if _EXEC.search(text) or _SECTION.search(text):
        best = None
        for m in _EXEC.finditer(text):
            if _section_at(text, m.start()) != "Service":
                continue
            end = _command_end(text, m.end(), unit=True)
            args = scan(text, m.end(), end, unit=True)
            if not args:
                continue
            cand = Command("unit", m.end(), end, args)
            if best is None or _ENGINE_CMD.search(text[m.end():end]):
                best = cand
        if best is None:
            raise InputError("no ExecStart= with a command in the [Service] section")
        return best
    # a shell script or a command line: the first line that runs the engine (or the first command)
    pos = 0
    first = None
    while pos < len(text):
        end = _command_end(text, pos)
        stripped = text[pos:end].lstrip()
        if stripped and not stripped.startswith("#"):
            args = scan(text, pos, end, unit=False)
            if args:
                kind = "docker" if _is_docker(args) else "shell"
                cmd = Command(kind, pos, end, args)
                if _ENGINE_CMD.search(text[pos:end]) or kind == "docker":
                    return cmd
                first = first or cmd
        pos = end + 1
    if first is None:
        raise InputError("no command found (expected a unit file with ExecStart=, a command line or `docker run`)")
    return first


def _is_docker(args: list[Arg]) -> bool:
    names = [os.path.basename(a.value) for a in args[:3]]
    return bool(names) and names[0] in ("docker", "podman", "nerdctl") and "run" in names[1:3]


def _section_at(text: str, pos: int) -> str | None:
    sec = None
    for m in _SECTION.finditer(text, 0, pos):
        sec = m[1].strip()
    return sec


# ----------------------------------------------------------------------------------------------------------------
# editing


def _spellings(step: FixStep, engine: str) -> dict[str, bool]:
    """Every spelling of the fix's lever on this engine → whether it is a switch (a unit may use an older alias)."""
    toks = tokens_for(step) or []
    out = {step.flag.split()[0]: len(toks) == 1}
    try:
        side = lv._lever(step.lever).side(engine)   # noqa: SLF001  (the lever table is the one source of spellings)
    except (KeyError, AttributeError):
        side = None
    if side is not None:
        for sp in side.flags:
            out.setdefault(sp.flag, sp.switch)
    return out


def tokens_for(step: FixStep) -> list[str] | None:
    """The fix as arguments: [] = remove the flag, [flag] = a switch, [flag, value] = set; None = not expressible."""
    text = step.text or ""
    if text.startswith("remove "):
        return []
    if text:
        return shlex.split(text)
    if step.to is True:
        return [step.flag]
    if step.to is False:
        return []
    if step.to is None:
        return None
    return [step.flag, str(step.to)]


def _quote(v: str) -> str:
    return v if re.fullmatch(r"[\w@%+=:,./-]+", v) else shlex.quote(v)


def apply_to_text(text: str, step: FixStep, engine: str) -> tuple[str, str]:
    """Return (new text, summary) with the flag added, replaced or removed in the launch command."""
    new_tokens = tokens_for(step)
    if new_tokens is None:
        raise NothingToApply(f"the fix names {step.flag} but not a value to set it to; edit it by hand")
    cmd = find_command(text)
    names = _spellings(step, engine)
    hits: list[tuple[int, int]] = []     # (index of the flag arg, number of args it spans)
    for i, a in enumerate(cmd.args):
        name = a.value.split("=", 1)[0]
        if name not in names:
            continue
        if "=" in a.value:
            hits.append((i, 1))
        else:
            nxt = cmd.args[i + 1] if i + 1 < len(cmd.args) else None
            takes_value = not names[name] and nxt is not None and not nxt.value.startswith("--")
            hits.append((i, 2 if takes_value else 1))
    edits: list[tuple[int, int, str]] = []
    if new_tokens == []:
        if not hits:
            raise NothingToApply(f"{step.flag} is not in the command: nothing to remove")
        for i, n in hits:
            edits.append(_removal(text, cmd, i, n))
        summary = f"remove {cmd.args[hits[0][0]].value.split('=', 1)[0]}"
    elif hits:
        i, n = hits[0]
        a = cmd.args[i]
        rendered = " ".join(_quote(t) for t in new_tokens)
        if len(new_tokens) == 2 and "=" in a.value and a.value.split("=", 1)[0] == new_tokens[0]:
            rendered = f"{new_tokens[0]}={_quote(new_tokens[1])}"
        elif len(new_tokens) == 2 and n == 2 and cmd.args[i].value == new_tokens[0]:
            # same flag, new value: touch only the value
            v = cmd.args[i + 1]
            edits.append((v.start, v.end, _quote(new_tokens[1])))
            rendered = None
        if rendered is not None:
            edits.append((a.start, cmd.args[i + n - 1].end, rendered))
        for j, m in hits[1:]:
            edits.append(_removal(text, cmd, j, m))
        summary = " ".join(new_tokens)
    else:
        edits.append(_insertion(text, cmd, " ".join(_quote(t) for t in new_tokens)))
        summary = "add " + " ".join(new_tokens)
    out = text
    for s, e, rep in sorted(edits, key=lambda x: -x[0]):
        out = out[:s] + rep + out[e:]
    return out, summary


def _removal(text: str, cmd: Command, i: int, n: int) -> tuple[int, int, str]:
    s, e = cmd.args[i].start, cmd.args[i + n - 1].end
    ls = text.rfind("\n", 0, s) + 1
    le = text.find("\n", e)
    le = len(text) if le < 0 else le
    before, after = text[ls:s], text[e:le]
    if ls > cmd.start and not before.strip() and re.fullmatch(r"[ \t]*\\?[ \t]*\r?", after):
        if "\\" in after:
            return ls, le + 1, ""          # the flag had a line of its own: drop the line
        # the command's last line: drop it and the continuation backslash that led to it
        bs = text.rfind("\\", cmd.start, ls)
        while bs > cmd.start and text[bs - 1] in " \t":
            bs -= 1
        return bs, le, ""
    while s > 0 and text[s - 1] in " \t":
        s -= 1
    return s, e, ""


def _insertion(text: str, cmd: Command, rendered: str) -> tuple[int, int, str]:
    last = cmd.args[-1]
    ls = text.rfind("\n", 0, last.start) + 1
    if ls > cmd.start:     # a continued command: add a line in the same style and indentation as the last one
        line = text[ls:last.start]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        return last.end, last.end, f" \\\n{indent}{rendered}"
    return last.end, last.end, " " + rendered


def new_name(path: str, step: FixStep) -> str:
    """sglang-qwen.service + graphs_off → sglang-qwen-nograph.service; mem_fraction 0.92 → ...-mem092."""
    p = Path(path)
    suffix = "".join(p.suffixes[-1:]) if p.suffix else ""
    stem = p.name[: -len(suffix)] if suffix else p.name
    short = _SHORT.get(step.lever, step.lever.replace("_", ""))
    if not isinstance(step.to, bool) and step.to is not None and (step.text or "").strip() and \
            not (step.text or "").startswith("remove "):
        short += re.sub(r"[^\w]", "", str(step.to))[:12]
    elif (step.text or "").startswith("remove ") and step.lever not in _SHORT:
        short = "no" + short
    if stem.endswith("-" + short):
        return p.name
    if "@" in stem and suffix == ".service" and stem.endswith("@"):
        return f"{stem[:-1]}-{short}@{suffix}"
    return f"{stem}-{short}{suffix}"


def _describe(text: str, summary: str, cause: str | None) -> str:
    m = re.search(r"^([ \t]*Description[ \t]*=[ \t]*)(.*?)[ \t]*$", text, re.M)
    if not m or _section_at(text, m.start()) != "Unit":
        return text
    desc = re.sub(r" \(logdoctor: [^)]*\)$", "", m[2])
    note = f" (logdoctor: {summary}" + (f", after {cause}" if cause else "") + ")"
    return text[:m.start(2)] + desc + note + text[m.end(2):]


def fix(text: str, path: str, d: Diagnosis) -> Change:
    """Apply d.fixes[0] to the launch command in text; raise NothingToApply when there is nothing flag-shaped."""
    if not d.failed:
        raise NothingToApply("the log shows no failure: nothing to fix")
    if d.no_flag_change or d.cause == "hardware_fault":
        raise NothingToApply(f"{d.cause}: no flag change will help (see `logdoctor explain`: check the host)")
    if d.cause in (None, "unknown"):
        raise NothingToApply("the cause is unknown: no flag change to apply (see `logdoctor explain` for what to "
                             "collect)")
    if not d.fixes:
        raise NothingToApply(f"{d.cause}: the verdict proposes no flag change (an engine defect or an outside "
                             f"cause; see `logdoctor explain`)")
    step = d.fixes[0]
    cmd_kind = find_command(text).kind
    out, summary = apply_to_text(text, step, d.engine)
    if cmd_kind == "unit":
        out = _describe(out, summary, d.cause)
    return Change(out, new_name(path, step), summary, cmd_kind)


def write_atomic(path: str | os.PathLike[str], text: str, mode: int | None = None) -> None:
    """Write via a temporary file in the same folder + rename: a reader sees the old file or the new one
    (logdoctor/atomic.py; a full disk or a missing folder is one line, exit 2, the target unchanged)."""
    from logdoctor.atomic import write_text
    write_text(path, text, mode=mode)
