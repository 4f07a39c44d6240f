"""Apply a verdict's fixes[0] to a launch command: a systemd unit's ExecStart= (as a drop-in, or a renamed copy), a
plain shell command line, or a `docker run` command, changing only the flag's own bytes.

Why a hand-written scanner and not shlex: shlex loses the offsets. Here every argument keeps its byte span in the
original text, so an edit replaces exactly that span (or inserts one next to the last argument) and everything
else (other flags, quoting, backslash continuations, comments, Environment= lines, other sections) stays byte for
byte.

Which command: the one systemd runs -- across the unit and its drop-ins in systemd's order, an empty `ExecStart=`
clears the list; of several (Type=oneshot) the one running the engine, and of several such the one whose value the
log shows (else refused as ambiguous). Inside `bash -c '...'` the edit goes into the script's engine command, never
after the script (bash would read it as $0). CRLF files are read as systemd reads them and written back in CRLF.

Where to: `UNIT.d/50-logdoctor.conf` (`dropin`): `ExecStart=` reset + the edited command; the unit keeps its name
and its history key, and later rounds read and update the same drop-in. `fix` (the renamed copy, `--new-unit`)
names the file after the change and never after UNIT_FILE itself. Every value written passed
`levers.check_value` / `levers.check_tokens` (one token of the lever's type).
"""

from __future__ import annotations

import bisect
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.core.errors import InputError, UsageError
from logdoctor.engines import ENGINES
from logdoctor.engines import levers as lv
from logdoctor.verdict.diagnosis import Diagnosis, FixStep

MAX_BYTES = 4 << 20  # a unit file is KBs; anything past this is not one (and never read whole)
DROPIN = "50-logdoctor.conf"  # the drop-in `fix --write` owns; systemd reads drop-ins in name order
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
_DIGEST_LINE = "# logdoctor-sha256: "
_ROUND = "# round "


class NothingToApply(UsageError):
    """The verdict has no flag-shaped change (hardware, unknown, an engine defect, no failure): exit 2."""


@dataclass
class Arg:
    value: str  # the argument after shell unquoting
    start: int  # byte span in the text (quotes included)
    end: int
    op: bool = False  # a shell control operator (`&&`, `||`, `;`, `|`, `&`) in a script or command line


@dataclass
class Command:
    kind: str  # "unit" | "docker" | "shell" | "script" (the engine command inside `bash -c '...'`)
    start: int  # span of the command text inside the file (for a unit: after "ExecStart=")
    end: int
    args: list[Arg]
    file: int = 0  # which file of a UnitSet holds it (0: the unit itself)


@dataclass
class Change:
    """What fix()/dropin() did: the new text, a name for it, and the one-line summary. `path`/`old`: the file a
    drop-in replaces and its text as read (\"\" when new)."""

    text: str
    name: str
    summary: str
    kind: str
    path: Path | None = None
    old: str = ""


@dataclass
class UnitSet:
    """A unit file and the drop-ins beside it, as systemd reads them: the unit first, then `UNIT.d/*.conf` by name."""

    name: str  # the unit's name: its history key
    dropin_dir: Path
    files: list[tuple[Path, str]] = field(default_factory=list)  # (path, text with LF line ends)
    own: str | None = None  # the text of our drop-in when it exists
    own_raw: bytes | None = None  # ... its bytes as read (to refuse it if it changes before the write)

    @property
    def dropin_path(self) -> Path:
        return self.dropin_dir / DROPIN


_EXEC = re.compile(r"^[ \t]*ExecStart[ \t]*=[ \t]*", re.M)
_SECTION = re.compile(r"^[ \t]*\[([^\]]+)\][ \t]*$", re.M)
# words that mark an engine launch command (engines/<name>.py command_words)
_ENGINE_CMD = re.compile("|".join(w for e in ENGINES.values() for w in e.command_words))
_SHORT = {
    "graphs_off": "nograph",
    "piecewise_graph_off": "nopiecewise",
    "mem_fraction": "mem",
    "context_length": "ctx",
    "max_running": "maxrun",
    "prefill_chunk": "chunk",
    "graph_max_bs": "graphbs",
    "tp_size": "tp",
    "attention_backend": "attn",
    "custom_all_reduce_off": "nocustomar",
    "torch_compile": "nocompile",
    "mamba_ratio": "mamba",
    "port": "port",
    "max_total_tokens": "maxtok",
    "max_prefill_tokens": "prefill",
}


# ----------------------------------------------------------------------------------------------------------------
# reading


def read_bounded(path: str | os.PathLike[str]) -> bytes:
    """A unit file's bytes: a regular file only (a FIFO or a device is refused at once, never waited on or read
    without end), at most MAX_BYTES. InputError (exit 2) with one line otherwise."""
    from logdoctor.input.sources.guard import read_regular

    return read_regular(path, MAX_BYTES, "a unit file or command line")


def decode(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name} is not UTF-8 text") from None


def _to_lf(text: str) -> tuple[str, bool]:
    """Text with LF line ends, and whether to write it back in CRLF (every line of the original had CRLF)."""
    if "\r\n" not in text:
        return text, False
    crlf = text.count("\r\n") == text.count("\n")
    return text.replace("\r\n", "\n"), crlf


def _from_lf(text: str, crlf: bool) -> str:
    return text.replace("\n", "\r\n") if crlf else text


# ----------------------------------------------------------------------------------------------------------------
# scanning


class _Sections:
    """Section headers found once: the section at any offset by bisection (no rescans: 20 000 ExecStart= lines)."""

    def __init__(self, text: str) -> None:
        found = [(m.start(), m[1].strip()) for m in _SECTION.finditer(text)]
        self.pos = [p for p, _ in found]
        self.names = [n for _, n in found]

    def at(self, pos: int) -> str | None:
        i = bisect.bisect_right(self.pos, pos) - 1
        return self.names[i] if i >= 0 else None


def scan(text: str, start: int, end: int, *, unit: bool, operators: bool = False) -> list[Arg]:
    """Split text[start:end] into arguments with spans. Backslash-newline continues the line; inside a unit file a
    continued line that starts with # or ; is a comment (systemd ignores it). With `shell`, unquoted `;`, `&` and
    `|` end a word and come out as operator arguments (`2>&1` and `&>` stay words)."""
    return _Scanner(text, start, end, unit=unit, operators=operators).run()


class _Scanner:
    """One scan(): the arguments found so far, the word being read (`cur` from `a_start`), the open quote. Each
    `_…` step reads the character at `i` and returns where the next step starts (`_END`: an unescaped newline
    ended the command)."""

    _END = -1

    def __init__(self, text: str, start: int, end: int, *, unit: bool, operators: bool) -> None:
        self.text, self.start, self.end = text, start, end
        self.unit, self.operators = unit, operators
        self.args: list[Arg] = []
        self.cur: list[str] = []
        self.a_start = -1
        self.quote = ""
        self.line_start = True

    def run(self) -> list[Arg]:
        i = self.start
        while i < self.end:
            if self.line_start and self.unit and not self.quote and not self.cur:
                after = self._comment_line(i)
                if after is not None:
                    i = after  # a comment line of a continued unit command: skipped, still at a line start
                    continue
                self.line_start = False
            i = self._quoted(i) if self.quote else self._unquoted(i)
            if i == self._END:
                return self.args  # the word before the newline is already out
        self._word_done(i)
        return self.args

    def _word_done(self, i: int) -> None:
        if self.a_start >= 0:
            self.args.append(Arg("".join(self.cur), self.a_start, i))
            self.cur, self.a_start = [], -1

    def _comment_line(self, i: int) -> int | None:
        """Where the next line starts when the line at `i` is a comment (# or ; after blanks), else None."""
        text, end = self.text, self.end
        j = i
        while j < end and text[j] in " \t":
            j += 1
        if j < end and text[j] in "#;":
            nl = text.find("\n", j)
            return end if nl < 0 or nl >= end else nl + 1
        return None

    def _quoted(self, i: int) -> int:
        text, c = self.text, self.text[i]
        if c == "\\" and self.quote == '"' and i + 1 < self.end and text[i + 1] in '"\\$`':
            self.cur.append(text[i + 1])
            return i + 2
        if c == self.quote:
            self.quote = ""
        else:
            self.cur.append(c)
        return i + 1

    def _unquoted(self, i: int) -> int:
        text, c = self.text, self.text[i]
        if c == "\\" and i + 1 < self.end and text[i + 1] == "\n":  # a continuation: the next line goes on
            self._word_done(i)
            self.line_start = True
            return i + 2
        if c in " \t\n":
            self._word_done(i)
            return self._END if c == "\n" else i + 1
        if self.operators and c in ";&|" and not self._redirection(i):
            return self._operator(i)
        return self._word_char(i)

    def _redirection(self, i: int) -> bool:
        """An `&` that belongs to a redirection (`2>&1`, `&>`), not a control operator."""
        text = self.text
        return text[i] == "&" and (
            (i > self.start and text[i - 1] in "<>") or (i + 1 < self.end and text[i + 1] == ">")
        )

    def _operator(self, i: int) -> int:
        """`;`, `&`, `|`, `&&` or `||`: ends the word before it and comes out as an operator argument."""
        text, c = self.text, self.text[i]
        self._word_done(i)
        j = i + 1
        if c != ";" and j < self.end and text[j] == c:
            j += 1
        self.args.append(Arg(text[i:j], i, j, op=True))
        return j

    def _word_char(self, i: int) -> int:
        text, c = self.text, self.text[i]
        if self.a_start < 0:
            self.a_start = i
        if c in "'\"":
            self.quote = c
        elif c == "\\" and i + 1 < self.end:
            self.cur.append(text[i + 1])
            return i + 2
        else:
            self.cur.append(c)
        return i + 1


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


def exec_entries(text: str, file: int = 0) -> list[Command | None]:
    """The [Service] section's ExecStart= lines in order: a Command each, None for an empty `ExecStart=` (which
    clears every command before it, in this file and the ones read earlier)."""
    sections = _Sections(text)
    out: list[Command | None] = []
    for m in _EXEC.finditer(text):
        if sections.at(m.start()) != "Service":
            continue
        end = _command_end(text, m.end(), unit=True)
        args = scan(text, m.end(), end, unit=True)
        out.append(Command("unit", m.end(), end, args, file) if args else None)
    return out


def _effective(entries: list[Command | None]) -> list[Command]:
    cmds: list[Command] = []
    for c in entries:
        if c is None:
            cmds = []
        else:
            cmds.append(c)
    return cmds


def find_command(text: str, step: FixStep | None = None, engine: str | None = None) -> Command:
    """The engine's launch command in a unit file, a shell command line or a docker run command. With `step`, of
    several engine commands (Type=oneshot) the one whose current value is the one the log showed (`step.from_`)."""
    if _EXEC.search(text) or _SECTION.search(text):
        cmds = _effective(exec_entries(text))
        if not cmds:
            raise InputError("no ExecStart= with a command in the [Service] section")
        return choose(cmds, [text], step, engine)
    # a shell script or a command line: the first line that runs the engine (or the first command)
    pos = 0
    first = None
    while pos < len(text):
        end = _command_end(text, pos)
        stripped = text[pos:end].lstrip()
        if stripped and not stripped.startswith("#"):
            args = scan(text, pos, end, unit=False, operators=True)
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


def choose(cmds: list[Command], texts: list[str], step: FixStep | None, engine: str | None) -> Command:
    """Of the commands systemd runs, the one to edit: the only one; else the only one running the engine; else the
    one whose value for the fix's lever is what the log showed. Several left: refused (InputError), never a guess."""
    if len(cmds) == 1:
        return cmds[0]
    eng = [c for c in cmds if _ENGINE_CMD.search(texts[c.file][c.start : c.end])] or cmds
    if len(eng) == 1:
        return eng[0]
    if step is None:
        return eng[-1]
    names = _spellings(step, engine or "")
    same = []
    for c in eng:
        tgt = target(texts[c.file], c)
        if _same(_current(tgt, names), step.from_):
            same.append(c)
    if len(same) == 1:
        return same[0]
    raise InputError(
        f"{len(eng)} ExecStart= commands run the engine (Type=oneshot) and "
        f"{'none' if not same else 'more than one'} has the {step.flag.split()[0]} value the log shows "
        f"({step.from_}): ambiguous, edit by hand"
    )


def _current(cmd: Command, names: dict[str, bool]) -> object:
    """The lever's value in a command: the flag's value text, True for a present switch, None when absent."""
    for i, a in enumerate(cmd.args):
        name, eq, val = a.value.partition("=")
        if name not in names:
            continue
        if eq:
            return val
        nxt = cmd.args[i + 1] if i + 1 < len(cmd.args) else None
        if not names[name] and nxt is not None and not nxt.op and not nxt.value.startswith("--"):
            return nxt.value
        return True
    return None


def _same(current: object, logged: object) -> bool:
    """Whether a command's value (`_current`) is the value the log showed in force."""
    if isinstance(logged, bool):
        return (current is not None) == logged  # a switch: present = on
    if logged is None or current is None or current is True:
        return logged is None and current is None
    try:
        return abs(float(str(current)) - float(str(logged))) < 1e-9
    except ValueError:
        return str(current).strip().lower() == str(logged).strip().lower()


def target(text: str, cmd: Command) -> Command:
    """The part of `cmd` to edit: the whole command, or in `bash -c 'SCRIPT'` the engine command inside SCRIPT
    (bash reads an argument after the script as $0: appending there changes nothing). A script whose quoting
    holds escapes is refused (InputError) rather than edited blind; in a script or shell line, the `&&`/`;`/`|`
    segment that runs the engine."""
    args = cmd.args
    if cmd.kind == "unit" and args:
        p0 = 0  # `env [VAR=value ...] bash -c ...` runs the same shell
        while p0 + 1 < len(args) and (
            os.path.basename(args[p0].value.lstrip("-@:+!|")) == "env"
            or (p0 > 0 and re.fullmatch(r"\w+=.*", args[p0].value))
        ):
            p0 += 1
        prog = os.path.basename(args[p0].value.lstrip("-@:+!|"))
        k = next((i for i, a in enumerate(args[p0 + 1 :], p0 + 1) if re.fullmatch(r"-[a-z]*c[a-z]*", a.value)), None)
        if prog in SHELLS and k is not None and k + 1 < len(args):
            script = args[k + 1]
            raw = text[script.start : script.end]
            if (
                len(raw) >= 2
                and raw[0] in "'\""
                and raw[-1] == raw[0]
                and raw[1:-1] == script.value
                and "\\" not in raw
                and "\n" not in raw
            ):
                inner = scan(text, script.start + 1, script.end - 1, unit=False, operators=True)
                seg = _segment(text, inner)
                if seg is None:
                    raise InputError(
                        f"ExecStart= runs `{prog} -c` with a script that starts no engine command: edit it by hand"
                    )
                return Command("script", seg[0].start, seg[-1].end, seg, cmd.file)
            raise InputError(
                f"ExecStart= runs the engine in a `{prog} -c` script whose quoting (escapes, several "
                f"lines or no quotes) logdoctor does not edit: edit it by hand"
            )
        return cmd
    if cmd.kind in ("shell", "docker") and any(a.op for a in args):
        seg = _segment(text, args)
        if seg is not None:
            return Command(cmd.kind, cmd.start, cmd.end, seg, cmd.file)
    return cmd


def _segment(text: str, args: list[Arg]) -> list[Arg] | None:
    """The `&&` / `||` / `;` / `|` separated part that runs the engine (the first such), or None."""
    segs: list[list[Arg]] = [[]]
    for a in args:
        if a.op:
            segs.append([])
        else:
            segs[-1].append(a)
    for seg in segs:
        if seg and _ENGINE_CMD.search(text[seg[0].start : seg[-1].end]):
            return seg
    return None


def _is_docker(args: list[Arg]) -> bool:
    names = [os.path.basename(a.value) for a in args[:3]]
    return bool(names) and names[0] in ("docker", "podman", "nerdctl") and "run" in names[1:3]


def _section_at(text: str, pos: int) -> str | None:
    return _Sections(text).at(pos)


# ----------------------------------------------------------------------------------------------------------------
# editing


def _spellings(step: FixStep, engine: str) -> dict[str, bool]:
    """Every spelling of the fix's lever on this engine → whether it is a switch (a unit may use an older alias)."""
    toks = tokens_for(step) or []
    out = {step.flag.split()[0]: len(toks) == 1}
    try:
        side = lv._lever(step.lever).side(engine)  # noqa: SLF001  (the lever table is the one source of spellings)
    except (KeyError, AttributeError):
        side = None
    if side is not None:
        for sp in side.flags:
            out.setdefault(sp.flag, sp.switch)
    return out


def tokens_for(step: FixStep) -> list[str] | None:
    """The fix as arguments: [] = remove the flag, [flag] = a switch, [flag, value] = set; None = not expressible.
    The value passes `levers.check_value` and every token `levers.check_tokens` (BadValue, exit 2, otherwise):
    nothing but one plain token of the lever's type reaches a command line."""
    text = step.text or ""
    if text.startswith("remove "):
        return []
    if step.to is not None:
        lv.check_value(step.lever, step.to, source=f"the fix for {step.flag.split()[0]}")
    if text:
        toks = text.split()
    elif step.to is True:
        toks = step.flag.split()
    elif step.to is False:
        return []
    elif step.to is None:
        return None
    else:
        toks = [*step.flag.split(), str(step.to)]
    return lv.check_tokens(step.lever, toks)


def _quote(v: str) -> str:
    return v if re.fullmatch(r"[\w@%+=:,./-]+", v) else "'" + v.replace("'", "'\\''") + "'"


def apply_to_text(text: str, step: FixStep, engine: str, cmd: Command | None = None) -> tuple[str, str]:
    """Return (new text, summary) with the flag added, replaced or removed in the launch command (`cmd`, else the
    one `find_command` picks)."""
    new_tokens = tokens_for(step)
    if new_tokens is None:
        raise NothingToApply(f"the fix names {step.flag} but not a value to set it to; edit it by hand")
    cmd = target(text, cmd if cmd is not None else find_command(text, step, engine))
    hits = _flag_hits(cmd, _spellings(step, engine))
    if new_tokens == []:
        if not hits:
            raise NothingToApply(f"{step.flag} is not in the command: nothing to remove")
        edits = [_removal(text, cmd, i, n) for i, n in hits]
        summary = f"remove {cmd.args[hits[0][0]].value.split('=', 1)[0]}"
    elif hits:
        edits = _replacement(text, cmd, hits, new_tokens)
        summary = " ".join(new_tokens)
    else:
        edits = [_insertion(text, cmd, " ".join(_quote(t) for t in new_tokens))]
        summary = "add " + " ".join(new_tokens)
    return _splice(text, edits), summary


def _flag_hits(cmd: Command, names: dict[str, bool]) -> list[tuple[int, int]]:
    """Where the lever's flag is in the command: (index of the flag arg, number of args it spans: 2 when its value
    is the next argument)."""
    hits: list[tuple[int, int]] = []
    for i, a in enumerate(cmd.args):
        name = a.value.split("=", 1)[0]
        if name not in names:
            continue
        if "=" in a.value:
            hits.append((i, 1))
        else:
            nxt = cmd.args[i + 1] if i + 1 < len(cmd.args) else None
            takes_value = not names[name] and nxt is not None and not nxt.op and not nxt.value.startswith("--")
            hits.append((i, 2 if takes_value else 1))
    return hits


def _replacement(
    text: str, cmd: Command, hits: list[tuple[int, int]], new_tokens: list[str]
) -> list[tuple[int, int, str]]:
    """The edits that set the flag at hits[0] to `new_tokens` (in its own spelling: `--flag=V` stays `=`, and the
    same flag with a new value touches only the value) and remove every later occurrence."""
    edits: list[tuple[int, int, str]] = []
    i, n = hits[0]
    a = cmd.args[i]
    rendered: str | None = " ".join(_quote(t) for t in new_tokens)
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
    return edits


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    """The text with each (start, end, replacement) applied (the spans do not overlap)."""
    parts: list[str] = []
    pos = 0
    for s, e, rep in sorted(edits):
        parts += [text[pos:s], rep]
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def _removal(text: str, cmd: Command, i: int, n: int) -> tuple[int, int, str]:
    s, e = cmd.args[i].start, cmd.args[i + n - 1].end
    ls = text.rfind("\n", 0, s) + 1
    le = text.find("\n", e)
    le = len(text) if le < 0 else le
    before, after = text[ls:s], text[e:le]
    if ls > cmd.start and not before.strip() and re.fullmatch(r"[ \t]*\\?[ \t]*\r?", after):
        if "\\" in after:
            return ls, le + 1, ""  # the flag had a line of its own: drop the line
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
    if ls > cmd.start:  # a continued command: add a line in the same style and indentation as the last one
        line = text[ls : last.start]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        return last.end, last.end, f" \\\n{indent}{rendered}"
    return last.end, last.end, " " + rendered


def new_name(path: str, step: FixStep) -> str:
    """sglang-qwen.service + graphs_off → sglang-qwen-nograph.service; mem_fraction 0.92 → ...-mem092. Never the
    name it was given (qwen-mem092.service + mem 0.92 → qwen-mem092-2.service): UNIT_FILE is never written over."""
    p = Path(path)
    suffix = "".join(p.suffixes[-1:]) if p.suffix else ""
    stem = p.name[: -len(suffix)] if suffix else p.name
    short = _SHORT.get(step.lever, step.lever.replace("_", ""))
    if (
        not isinstance(step.to, bool)
        and step.to is not None
        and (step.text or "").strip()
        and not (step.text or "").startswith("remove ")
    ):
        short += re.sub(r"[^\w]", "", str(step.to))[:12]
    elif (step.text or "").startswith("remove ") and step.lever not in _SHORT:
        short = "no" + short
    if stem.endswith("-" + short):
        short = "2"
    if "@" in stem and suffix == ".service" and stem.endswith("@"):
        return f"{stem[:-1]}-{short}@{suffix}"
    return f"{stem}-{short}{suffix}"


def _describe(text: str, summary: str, cause: str | None) -> str:
    m = re.search(r"^([ \t]*Description[ \t]*=[ \t]*)(.*?)[ \t]*$", text, re.M)
    if not m or _section_at(text, m.start()) != "Unit":
        return text
    desc = re.sub(r" \(logdoctor: [^)]*\)$", "", m[2])
    note = f" (logdoctor: {summary}" + (f", after {cause}" if cause else "") + ")"
    return text[: m.start(2)] + desc + note + text[m.end(2) :]


def check_applicable(d: Diagnosis) -> FixStep:
    """fixes[0] when the verdict has a flag-shaped change; NothingToApply (exit 2) with the reason otherwise."""
    if not d.failed:
        raise NothingToApply("the log shows no failure: nothing to fix")
    if d.no_flag_change or d.cause == "hardware_fault":
        raise NothingToApply(f"{d.cause}: no flag change will help (see `logdoctor explain`: check the host)")
    if d.cause in (None, "unknown"):
        raise NothingToApply(
            "the cause is unknown: no flag change to apply (see `logdoctor explain` for what to collect)"
        )
    if not d.fixes:
        raise NothingToApply(
            f"{d.cause}: the verdict proposes no flag change (an engine defect or an outside "
            f"cause; see `logdoctor explain`)"
        )
    return d.fixes[0]


def fix(text: str, path: str, d: Diagnosis) -> Change:
    """Apply d.fixes[0] to the launch command in text (the whole file, to be written as a renamed copy); raise
    NothingToApply when there is nothing flag-shaped."""
    step = check_applicable(d)
    lf, crlf = _to_lf(text)
    cmd = find_command(lf, step, d.engine)
    out, summary = apply_to_text(lf, step, d.engine, cmd)
    if cmd.kind == "unit":
        out = _describe(out, summary, d.cause)
    return Change(_from_lf(out, crlf), new_name(path, step), summary, cmd.kind)


# ----------------------------------------------------------------------------------------------------------------
# drop-ins


def is_unit(path: str | os.PathLike[str], text: str) -> bool:
    """A systemd unit (or a drop-in of one), not a shell command line or a docker run line."""
    return bool(_EXEC.search(text) or _SECTION.search(text))


def load_unit(path: str | os.PathLike[str]) -> UnitSet:
    """The unit at `path` and its drop-ins in `UNIT.d/` beside it (or, for a drop-in given as
    `UNIT.d/NAME.conf`, the unit beside that folder if present), in systemd's order. Each file is read bounded,
    regular files only; a drop-in linked to /dev/null (masked) is skipped, as systemd does."""
    p = Path(path)
    if p.parent.name.endswith(".d") and p.suffix == ".conf":
        name, ddir = p.parent.name[:-2], p.parent
        unit_path: Path | None = ddir.parent / name
    else:
        name, ddir, unit_path = p.name, p.with_name(p.name + ".d"), p
    us = UnitSet(name=name, dropin_dir=ddir)
    if unit_path is not None and (unit_path == p or unit_path.exists()):
        us.files.append((unit_path, _to_lf(decode(read_bounded(unit_path), str(unit_path)))[0]))
    try:
        names = sorted(e.name for e in os.scandir(ddir) if e.name.endswith(".conf"))
    except FileNotFoundError:
        names = []
    except OSError as e:
        raise InputError(f"cannot read {ddir}: {e.strerror or e}") from None
    for n in names:
        f = ddir / n
        try:
            st = os.stat(f)
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode) and f.is_symlink():
            continue  # masked (-> /dev/null)
        raw = read_bounded(f)
        text = _to_lf(decode(raw, str(f)))[0]
        us.files.append((f, text))
        if n == DROPIN:
            us.own, us.own_raw = text, raw
    return us


def command_in_force(us: UnitSet, engine: str | None = None) -> tuple[str, Command]:
    """The ExecStart= systemd runs for the unit set (unit + drop-ins, an empty `ExecStart=` clearing earlier ones),
    with the text of the file that holds it: what preflight checks and what `fix` edits."""
    entries: list[Command | None] = []
    for i, (_, text) in enumerate(us.files):
        entries += exec_entries(text, i)
    cmds = _effective(entries)
    if not cmds:
        raise InputError("no ExecStart= with a command in the [Service] section")
    cmd = choose(cmds, [t for _, t in us.files], None, engine)
    return us.files[cmd.file][1], cmd


def _digest(body: str) -> str:
    import hashlib

    return hashlib.sha256(body.encode()).hexdigest()


def _own_is_untouched(text: str) -> bool:
    """Our drop-in as logdoctor wrote it: its digest line matches the body below it."""
    head, sep, body = text.partition("\n[Service]\n")
    line = next((x for x in head.splitlines() if x.startswith(_DIGEST_LINE)), None)
    return bool(sep) and line is not None and line[len(_DIGEST_LINE) :].strip() == _digest("[Service]\n" + body)


def dropin(us: UnitSet, d: Diagnosis) -> Change:
    """The next `UNIT.d/50-logdoctor.conf`: `ExecStart=` reset + the command systemd runs now (unit + drop-ins)
    with d.fixes[0] applied. Refused (InputError, exit 2): our drop-in edited by hand since logdoctor wrote it, or
    the command in force set by a drop-in systemd reads after ours (ours would not take effect)."""
    step = check_applicable(d)
    if os.path.lexists(us.dropin_path) and not us.dropin_path.is_file():
        raise InputError(f"{us.dropin_path} exists and is not a regular file (masked, or a FIFO): not replaced")
    if us.own is not None and not _own_is_untouched(us.own):
        raise InputError(
            f"{us.dropin_path} was edited since logdoctor wrote it (or not written by logdoctor): not "
            f"replaced; merge the change into the unit by hand or remove that file"
        )
    entries: list[Command | None] = []
    for i, (_, text) in enumerate(us.files):
        entries += exec_entries(text, i)
    cmds = _effective(entries)
    if not cmds:
        raise InputError("no ExecStart= with a command in the [Service] section")
    texts = [t for _, t in us.files]
    cmd = choose(cmds, texts, step, d.engine)
    src_path, src = us.files[cmd.file]
    if cmd.file > 0 and src_path.name > DROPIN:
        raise InputError(
            f"ExecStart= in {src_path.name} is read after {DROPIN}: a drop-in there would not take "
            f"effect; edit {src_path.name} by hand or use --new-unit"
        )
    new_src, summary = apply_to_text(src, step, d.engine, cmd)
    span = new_src[cmd.start : cmd.end + len(new_src) - len(src)]
    body = f"[Service]\nExecStart=\nExecStart={span}\n"
    why = f", after {d.cause}" if d.cause else ""
    rounds = [x for x in (us.own or "").splitlines() if x.startswith(_ROUND)]
    rounds.append(f"{_ROUND}{len(rounds) + 1}: {summary}{why}")
    text = (
        f"# Written by `logdoctor fix` for {us.name}; systemd reads it after the unit file, the unit keeps its\n"
        f"# name and its attempt history. logdoctor updates this file on the next round and refuses to replace it\n"
        f"# once edited by hand. The changes, oldest first:\n" + "\n".join(rounds) + "\n"
        f"{_DIGEST_LINE}{_digest(body)}\n{body}"
    )
    return Change(text, f"{us.name}.d/{DROPIN}", summary, "dropin", us.dropin_path, us.own or "")


def write_atomic(path: str | os.PathLike[str], text: str, mode: int | None = None, expect=None) -> None:
    """Write via a temporary file in the same folder + rename: a reader sees the old file or the new one
    (logdoctor/core/atomic.py: a device or FIFO is a stream, a symlink stays one, a full disk or a missing folder is one
    line, exit 2, the target unchanged; `expect` refuses a target changed since it was read)."""
    from logdoctor.core.atomic import write_text

    write_text(path, text, mode=mode, expect=expect)
