"""Parse the configuration dumps and launch command lines of inference engines.

Why: the fix planner must know which value a lever had when the service died ("never suggest a value already in
force"), and the only witnesses are the dumps the engines print at start-up (SGLang ``server_args=``, vLLM
``non-default args:`` / ``Namespace(...)`` / ``Initializing a V1 LLM engine ... with config:``) and the command line
in the unit file. Both arrive damaged: journals and people cut long lines, so every parser here returns whatever
complete ``key=value`` pairs precede the cut (``truncated=True``) and never raises.

The literal grammars use pyparsing, built once at import and immutable in use. Runs of simple ``key=scalar`` items
go through one custom terminal (see ``_Run``). No packrat: it made parsing 2x slower here, and it is a process-wide
switch other modules would feel. Command lines use ``shlex``.

Cost on the ``explain`` path (2-core AMD EPYC VM, Python 3.11, pyparsing 3.3; ``bench/bench_config_dump.py``):
``import pyparsing`` ~45 ms plus ~20 ms to build these grammars, once per process. That is the largest fixed cost
of diagnosing a 140-line log, so import this module lazily, on the first dump or command line. A 6 KB dump of
realistic shape parses in 0.6-0.8 ms (0.8-1.0x ``ast.literal_eval`` on the same dict, which cannot handle cut lines or
raw objects); an adversarial one (1 value in 4 a container, 1 in 12 nested) takes ~3.5 ms (3.5x).
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field

import pyparsing as pp

from logdoctor.engines import ENGINES as _REGISTRY
from logdoctor.engines.config_types import ConfigDump

__all__ = [
    "ConfigDump",
    "CommandLine",
    "parse_server_args",
    "parse_py_dict",
    "parse_namespace",
    "parse_vllm_engine_config",
    "parse_command_line",
    "parse_literal",
    "Raw",
]


@dataclass(frozen=True)
class CommandLine:
    """A launch command reduced to what a diagnosis needs. ``args`` keys are the engine's python field names;
    ``launcher`` holds container-runtime options (``image``, ``shm_size``, ``gpus``, ...) that are not engine flags
    but still decide failures (shared memory, visible GPUs)."""

    program: str | None
    module: str | None
    env: dict[str, str]
    args: dict[str, object]
    positionals: list[str]
    engine: str | None = None
    launcher: dict[str, object] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------------------------
# Literal grammar (python reprs, JSON, and raw objects kept as text)
#
# Speed: most fields are `key=scalar` or a flat list/dict. Runs of them go through one custom terminal (_Run) that
# loops a compiled regex; the recursive pyparsing grammar only sees nested containers and raw objects. This took a
# 6 KB synthetic line from ~10 ms to ~3 ms, and a realistic one to ~0.5-1 ms. Packrat made it 2x slower.


class Raw(str):
    """Text of an object a dump shows but we cannot evaluate (``torch.bfloat16``, ``<Enum.X: 1>``, ``Cls(a=1)``).
    A plain str in every use; ``isinstance(v, Raw)`` tells it from a real string value."""


_CLOSED = object()  # token emitted when a dump's closing bracket (or end of line) was reached

_STR = r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\""
_NUM = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])"
_KW = r"(?:None|True|False|true|false|null|[-+]?inf|nan)(?![\w.(])"
_SCALAR = rf"(?:(?P<s>{_STR})|(?P<n>{_NUM})|(?P<k>{_KW}))"
_SCALAR_RE = re.compile(_SCALAR)
# a bracket with no nested bracket inside (strings allowed); validated by _flat() as "scalars and separators only"
_FLAT = r"""\[(?:[^\[\]{}()'"<>\n]|%s)*\]|\((?:[^\[\]{}()'"<>\n]|%s)*\)|\{(?:[^\[\]{}()'"<>\n]|%s)*\}""" % ((_STR,) * 3)
_ATOM = rf"(?:{_SCALAR}|(?P<c>{_FLAT}))"
_BAD = object()
_KEYWORDS: dict[str, object] = {
    "None": None,
    "null": None,
    "True": True,
    "true": True,
    "False": False,
    "false": False,
    "inf": float("inf"),
    "+inf": float("inf"),
    "-inf": float("-inf"),
    "nan": float("nan"),
}
_JSON_SLASH = re.compile(r"(?<!\\)((?:\\\\)*)\\/")  # JSON's "\/" is not a python escape


def _unquote(tok: str) -> str:
    """Decode a quoted literal; only strings with escapes pay for ``ast.literal_eval``."""
    body = tok[1:-1]
    if "\\" not in body:
        return body
    try:
        return ast.literal_eval(_JSON_SLASH.sub(r"\1/", tok) if tok[0] == '"' else tok)
    except (ValueError, SyntaxError):
        return body


def _convert(m: re.Match) -> object:
    """Python value of a match of ``_SCALAR`` or ``_ATOM`` (groups s/n/k, c = flat container; may be ``_BAD``)."""
    if (c := m.groupdict().get("c")) is not None:
        return _flat(c)
    if (s := m.group("s")) is not None:
        return _unquote(s)
    if (n := m.group("n")) is not None:
        return float(n) if any(ch in n for ch in ".eE") else int(n)
    return _KEYWORDS[m.group("k")]


def _flat(c: str) -> object:
    """``[1, 'a']`` / ``(1,)`` / ``{'a': 1}`` holding only scalars -> value; anything else -> ``_BAD`` (the slow,
    recursive grammar then takes it: sets, raw objects, nesting)."""
    vals: list[object] = []
    seps: list[str] = []
    pos, end = 1, len(c) - 1
    for m in _SCALAR_RE.finditer(c, 1, end):
        seps.append(c[pos : m.start()].strip())
        vals.append(_convert(m))
        pos = m.end()
    tail = c[pos:end].strip()
    if not vals:
        return (list if c[0] == "[" else tuple if c[0] == "(" else dict)() if not tail else _BAD
    if seps[0] or tail not in ("", ","):
        return _BAD
    if c[0] == "{":
        if len(vals) % 2 or any(sep != (":" if i % 2 else ",") for i, sep in enumerate(seps[1:], 1)):
            return _BAD
        try:
            return dict(zip(vals[::2], vals[1::2]))
        except TypeError:
            return _BAD
    if any(sep != "," for sep in seps[1:]) or (c[0] == "(" and len(vals) == 1 and tail != ","):
        return _BAD
    return vals if c[0] == "[" else tuple(vals)


def _unnamed(pattern: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


class _Run(pp.Token):
    """``[key] atom (, [key] atom)*`` -- a run of simple items -- in one terminal.

    Why: most dump fields are ``key=scalar``; matching them one pyparsing element at a time costs ~20 element calls
    per field (a 6 KB line took ~10 ms). This token loops one small compiled regex and stops before the first item it
    cannot take (a nested value, a raw object, or a value not followed by ``lookahead`` -- i.e. cut), leaving that
    item to the recursive grammar. ``key``: a pattern with a ``(?P<key>...)`` group; ``key_kind``: "name" (keep
    text), "literal" (evaluate: dict keys)."""

    _SEP = re.compile(r"\s*,\s*")

    def __init__(self, lookahead: str, key: str = "", key_kind: str = "") -> None:
        super().__init__()
        self._one = re.compile(f"{key}{_ATOM}(?={lookahead})")
        self._key_kind = key_kind
        self.mayIndexError = False
        self.errmsg = "expected simple items"

    def _generateDefaultName(self) -> str:
        return "simple-items"

    def parseImpl(self, instring: str, loc: int, do_actions: bool = True) -> tuple[int, pp.ParseResults]:
        out: list[object] = []
        one, sep, kind = self._one.match, self._SEP.match, self._key_kind
        pos = loc
        while True:
            m = one(instring, pos)
            if m is None:
                break
            v = _convert(m)
            if v is _BAD:
                break
            if kind:
                k = m.group("key")
                if kind == "literal":
                    k = k[1:-1] if k[0] in "'\"" and "\\" not in k else _scalar_key(k)
                out.append((k, v))
            else:
                out.append(v)
            loc = m.end()
            s = sep(instring, loc)
            if s is None:
                break
            pos = s.end()
        if not out:
            raise pp.ParseException(instring, loc, self.errmsg, self)
        return loc, pp.ParseResults(out)


def _scalar_key(text: str) -> object:
    m = _SCALAR_RE.fullmatch(text.strip())
    return _convert(m) if m else text


def _scalar_action(t: pp.ParseResults) -> list[object]:
    return [_convert(t[0])]  # a one-item list: a bare None return would tell pyparsing "tokens unchanged"


def _scalar(lookahead: str = "") -> pp.ParserElement:
    pat = f"{_SCALAR}(?={lookahead})" if lookahead else _SCALAR
    return pp.Regex(pat, as_match=True).set_parse_action(_scalar_action).set_name("scalar")


def _dict_action(t: pp.ParseResults) -> list[dict]:
    out: dict = {}
    for pair in t:
        k, v = pair
        try:
            out[k] = v
        except TypeError:  # unhashable key (a list): keep it readable rather than fail the dump
            out[repr(k)] = v
    return [out]


def _build_literal() -> tuple[pp.ParserElement, pp.ParserElement, pp.ParserElement, pp.ParserElement]:
    """Returns (value, containers, balanced-group, angle-object) elements shared by all dump grammars."""
    S = pp.Suppress
    value = pp.Forward().set_name("value")
    angle = pp.Regex(r"<[^<>\n]*(?:<[^<>\n]*>[^<>\n]*)*>").set_parse_action(lambda t: Raw(t[0]))
    # balanced bracket group, kept as text: the body of Cls(...), sets, anything we do not evaluate
    group = pp.Forward()
    chunk = pp.Regex(r"[^()\[\]{}'\"]+")
    qstr = pp.Regex(_STR)
    body = pp.ZeroOrMore(qstr | group | chunk)
    group <<= (pp.Literal("(") + body + ")") | (pp.Literal("[") + body + "]") | (pp.Literal("{") + body + "}")

    def seq(close: str) -> pp.ParserElement:
        elem = _Run(rf"\s*[,{close}]") | value
        return pp.Opt(elem + pp.ZeroOrMore(S(",") + elem)) + pp.Opt(S(","))

    lst = (S("[") + seq(r"\]") + S("]")).set_parse_action(lambda t: [t.as_list()])
    tup = (S("(") + seq(r")") + S(")")).set_parse_action(lambda t: [tuple(t.as_list())])
    pair = pp.Group(value + S(":") + value)
    pair_run = _Run(r"\s*[,}]", rf"(?P<key>{_unnamed(_SCALAR)})\s*:\s*", "literal").add_parse_action(
        lambda t: [[k, v] for k, v in t]
    )
    pairs = pair_run | pair
    dct = (S("{") + pp.Opt(pairs + pp.ZeroOrMore(S(",") + pairs)) + pp.Opt(S(",")) + S("}")).set_parse_action(
        _dict_action
    )
    containers = lst | dct | tup
    nested_raw = pp.original_text_for(
        pp.OneOrMore(qstr | angle | group | pp.Regex(r"[^,:()\[\]{}'\"<\s][^,:()\[\]{}'\"]*"))
    ).add_parse_action(lambda t: Raw(t[0].strip()))
    value <<= _scalar() | containers | angle | nested_raw
    return value, containers, group, angle


_VALUE, _CONTAINERS, _GROUP, _ANGLE = _build_literal()
_LITERAL = (_VALUE + pp.StringEnd()).parse_with_tabs()


def _top_value(delim: str, raw_chunk: str) -> pp.ParserElement:
    """A dump's top-level value: it must be followed by ``delim`` (a regex lookahead) or it counts as cut."""
    follow = pp.FollowedBy(pp.Regex(delim))
    raw = pp.original_text_for(pp.OneOrMore(pp.Regex(_STR) | _ANGLE | _GROUP | pp.Regex(raw_chunk)))
    raw.add_parse_action(lambda t: Raw(t[0].strip()))
    return _scalar(delim) | (_CONTAINERS + follow) | (_ANGLE + follow) | (raw + follow)


def _item_action(t: pp.ParseResults) -> list[tuple[str, object]]:
    return [(t[0], t[1])]


def _dump_grammar(
    head: str, key: pp.ParserElement, key_pat: str, key_kind: str, delim: str, raw_chunk: str, closer: pp.ParserElement
) -> pp.ParserElement:
    run = _Run(delim, key_pat, key_kind)
    item = (key + _top_value(delim, raw_chunk)).set_parse_action(_item_action)
    elided = pp.Regex(rf"(?:\.\.\.|\u2026)(?={delim})").suppress()  # `..., ` where a person or vLLM elided fields
    entry = run | item | elided
    items = pp.Opt(entry + pp.ZeroOrMore(pp.Suppress(",") + entry))
    end = closer.copy().set_parse_action(lambda: [_CLOSED])
    start = pp.Regex(head).suppress() if head else pp.Empty()
    return (start + items + (end | pp.Opt(pp.Suppress(",")))).parse_with_tabs()


_NAME_KEY = r"(?P<key>[A-Za-z_]\w*)\s*=\s*"
_STR_KEY = rf"(?P<key>{_unnamed(_STR)})\s*:\s*"
_KV_KEY_EL = pp.Regex(r"([A-Za-z_]\w*)\s*=").set_parse_action(lambda t: t[0].rstrip("= \t"))
_STR_KEY_EL = pp.Regex(rf"({_STR})\s*:").set_parse_action(lambda t: _unquote(t[0].rstrip(": \t")))
_REPR_CHUNK = r"[^,()\[\]{}'\"<\s][^,()\[\]{}'\"]*"
_KV_CHUNK = r"[^,()\[\]{}'\"\s][^,()\[\]{}'\"\n]*"

_REPR_G = _dump_grammar(r"\w+\(", _KV_KEY_EL, _NAME_KEY, "name", r"\s*[,)]", _REPR_CHUNK, pp.Literal(")"))
_DICT_G = _dump_grammar(r"\{", _STR_KEY_EL, _STR_KEY, "literal", r"\s*[,}]", _REPR_CHUNK, pp.Literal("}"))
_KV_G = _dump_grammar(r"", _KV_KEY_EL, _NAME_KEY, "name", r"\s*(?:,|$)", _KV_CHUNK, pp.StringEnd())


def _run(grammar: pp.ParserElement, text: str, form: str) -> ConfigDump:
    try:
        toks = grammar.parse_string(text, parse_all=False)
    except (pp.ParseBaseException, RecursionError):  # RecursionError: absurd nesting; unreadable, not a crash
        return ConfigDump({}, True, form)
    values: dict[str, object] = {}
    closed = False
    for tok in toks:
        if tok is _CLOSED:
            closed = True
        else:
            values[tok[0]] = tok[1]
    return ConfigDump(values, not closed, form)


def parse_server_args(text: str) -> ConfigDump:
    """SGLang ``server_args=ServerArgs(...)`` (classic repr) or ``server_args={...}`` (0.5.23 dict form)."""
    i = text.find("ServerArgs(")
    j = text.find("server_args=")
    if i >= 0 and text[i + len("ServerArgs(") :].lstrip().startswith("{"):
        # ServerArgs({...}): some builds wrap the resolved dict in the class name
        return _run(_DICT_G, text[text.index("{", i) :], "dict")
    if i >= 0 and (j < 0 or i <= j + len("server_args=")):
        return _run(_REPR_G, text[i:], "serverargs-repr")
    if j >= 0:
        k = text.find("{", j)
        if k >= 0 and not text[j + len("server_args=") : k].strip():
            return _run(_DICT_G, text[k:], "dict")
    k = text.find("{")
    return _run(_DICT_G, text[k:], "dict") if k >= 0 else ConfigDump({}, True, "serverargs-repr")


def parse_py_dict(text: str) -> ConfigDump:
    """A python dict repr such as vLLM ``non-default args: {...}`` (secrets show as ``'***'``)."""
    j = text.find("non-default args:")
    k = text.find("{", j if j >= 0 else 0)
    return _run(_DICT_G, text[k:], "dict") if k >= 0 else ConfigDump({}, True, "dict")


def parse_namespace(text: str) -> ConfigDump:
    """An argparse ``Namespace(model='x', ...)`` repr (older vLLM builds print their args this way)."""
    i = text.find("Namespace(")
    return _run(_REPR_G, text[i:], "namespace") if i >= 0 else ConfigDump({}, True, "namespace")


def parse_vllm_engine_config(text: str) -> ConfigDump:
    """vLLM ``... with config: model='x', dtype=torch.bfloat16, compilation_config={...}`` (one line).

    The list has no closing bracket, so a cut exactly between two items cannot be told from the real end: the last
    value of a cut line may itself be cut (``dtype=torch.bfl``). A cut inside a quote, bracket or key is detected."""
    i = text.find("with config:")
    body = text[i + len("with config:") :] if i >= 0 else text
    body = body.lstrip().split("\n", 1)[0].rstrip()
    return _run(_KV_G, body, "kv-list")


def parse_literal(text: str) -> object:
    """One python/JSON literal (used for quoted flag values); raises ValueError when it is not one."""
    try:
        return _LITERAL.parse_string(text.strip(), parse_all=True)[0]
    except (pp.ParseBaseException, RecursionError) as exc:
        raise ValueError(f"not a literal: {text[:60]!r}") from exc


# --------------------------------------------------------------------------------------------------------------------
# Command lines

_PY_RE = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?$")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_UPPER_ASSIGN_RE = re.compile(r"^[A-Z_][A-Z0-9_]*=")
_NUMBER_RE = re.compile(r"^[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?$")
_INT_RE = re.compile(r"^[-+]?\d+$")
_CONTROL = {"|", "||", "&&", ";", "&", "|&"}
_WRAPPERS = {"exec", "nohup", "time", "command", "builtin"}
_NOT_LAUNCH = {
    "cd",
    "export",
    "source",
    ".",
    "echo",
    "printf",
    "mkdir",
    "set",
    "ulimit",
    "umask",
    "trap",
    "sleep",
    "rm",
    "cp",
    "mv",
    "tee",
    "grep",
    "cat",
    "true",
    "false",
    "test",
    "[",
    "wait",
    "unset",
    "logger",
}
_LAUNCH_WORDS = {
    "env",
    "exec",
    "nohup",
    "sudo",
    "docker",
    "podman",
    "nvidia-docker",
    "bash",
    "sh",
    "numactl",
    "taskset",
    "uv",
    "conda",
    "poetry",
    "pipenv",
    "stdbuf",
    "nice",
    "timeout",
}

# Per engine with a command-line grammar (engines/<name>.py: FLAG_ALIASES, NARGS_FLAGS, HINT_FLAGS), after
# dash->underscore normalisation (argparse dest names): aliases, flags taking one or more values (always a list),
# and flags only that engine has (to tell the engine of a bare fragment).
_GRAMMAR = tuple(e for e in _REGISTRY.values() if e.command_line)
_ALIASES: dict[str, dict[str, str]] = {e.name: dict(e.flag_aliases) for e in _GRAMMAR}
_NARGS: dict[str, frozenset[str]] = {e.name: e.nargs_flags for e in _GRAMMAR}
_ENGINE_HINTS: dict[str, frozenset[str]] = {e.name: e.hint_flags for e in _GRAMMAR}
# without a known engine: every grammar's aliases, the earlier-registered engine winning a clash
_ALL_ALIASES: dict[str, str] = {k: v for e in reversed(_GRAMMAR) for k, v in e.flag_aliases.items()}
_ALL_NARGS: frozenset[str] = frozenset().union(*_NARGS.values())
_NO_NEGATES = frozenset(e.name for e in _GRAMMAR if e.no_flags_negate)
_LAUNCH_WORDS |= {e.name for e in _GRAMMAR}  # `vllm serve ...`, `sglang serve ...`
_SWITCH_PREFIXES = ("enable_", "disable_", "enforce_", "skip_", "allow_", "no_")
_SWITCHES = frozenset(
    {
        "trust_remote_code",
        "enforce_eager",
        "served_model_name_as_default",
        "log_requests",
        "disable_log_requests",
        "disable_log_stats",
        "headless",
        "show_time_cost",
        "enable_metrics",
    }
)
_OPT_LEVEL_RE = re.compile(r"^-O(\d)$")
_BOOL_WORDS = {"true": True, "True": True, "false": False, "False": False}

# docker/podman options that take a value (everything else is a switch unless written --opt=value)
_DOCKER_VALUED = frozenset(
    "-e --env --env-file -v --volume -p --publish --name --gpus --shm-size --ipc --network --net -w --workdir "
    "-u --user --entrypoint --runtime --ulimit --cpus -m --memory --memory-swap --device --cap-add --cap-drop "
    "--security-opt --restart --label -l --mount --platform --pull --log-driver --log-opt --hostname -h "
    "--add-host --pid --cpuset-cpus --tmpfs --group-add --dns --expose --stop-signal --stop-timeout --cgroupns "
    "--uts --userns --sysctl --storage-opt --oom-score-adj --cidfile --device-cgroup-rule --health-cmd "
    "--label-file --volumes-from --link --mac-address --ip --annotation".split()
)
_DOCKER_LIST = frozenset({"volume", "publish", "device", "mount", "add_host", "cap_add", "ulimit", "label"})


def _split(text: str) -> list[str]:
    """shlex, repaired for pasted lines with an unbalanced quote (cut lines); never raises."""
    for suffix in ("", "'", '"'):
        try:
            return shlex.split(text + suffix, posix=True)
        except ValueError:
            continue
    return text.split()


def _is_flag(tok: str) -> bool:
    return tok.startswith("-") and len(tok) > 1 and not _NUMBER_RE.match(tok)


def _coerce(s: str) -> object:
    """Flag text to a python value: numbers, true/false, JSON/python literals; anything else stays a string."""
    if _NUMBER_RE.match(s):
        return int(s) if _INT_RE.match(s) else float(s)
    if s in _BOOL_WORDS:
        return _BOOL_WORDS[s]
    st = s.strip()
    if st[:1] in "{[" and st[-1:] in "}]":
        try:
            return json.loads(st)
        except ValueError:
            try:
                return parse_literal(st)
            except ValueError:
                return s
    return s


def _engine_of(*names: str | None) -> str | None:
    """The first engine (with a command-line grammar) whose name appears in a module/program/image/script name."""
    for n in names:
        low = (n or "").lower()
        for e in _GRAMMAR:
            if e.name in low:
                return e.name
    return None


def _peel_env(toks: list[str], env: dict[str, str]) -> list[str]:
    """``env [-i] [-u NAME] A=1 cmd`` -> env updated, returns ``cmd ...``."""
    i = 1
    while i < len(toks):
        t = toks[i]
        if t in ("-u", "--unset") and i + 1 < len(toks):
            env.pop(toks[i + 1], None)
            i += 2
        elif t.startswith("-"):
            i += 1
        elif m := _ASSIGN_RE.match(t):
            env[m.group(1)] = m.group(2)
            i += 1
        else:
            break
    return toks[i:]


def _peel_docker(toks: list[str], env: dict[str, str], launcher: dict[str, object]) -> list[str]:
    """``docker run [opts] IMAGE [cmd ...]`` -> env/launcher updated, returns ``cmd ...`` (entrypoint prepended)."""
    i = 1
    while i < len(toks) and toks[i] in ("run", "create", "container", "exec"):
        i += 1
    while i < len(toks):
        t = toks[i]
        if t == "--":
            i += 1
            break
        if not t.startswith("-") or t == "-":
            break
        name, eq, val = t.partition("=")
        if not eq and name in _DOCKER_VALUED and i + 1 < len(toks):
            val, i = toks[i + 1], i + 2
        else:
            i += 1
            if not eq:
                val = True  # switch (--rm, -it, --privileged, unknown long options)
        key = name.lstrip("-").replace("-", "_")
        if key in ("e", "env") and isinstance(val, str):
            k, has, v = val.partition("=")
            env[k] = v if has else ""
        elif key in _DOCKER_LIST or key in ("v", "p"):
            key = {"v": "volume", "p": "publish"}.get(key, key)
            launcher.setdefault(key, [])
            launcher[key].append(val)  # type: ignore[union-attr]
        else:
            launcher[{"m": "memory", "w": "workdir", "u": "user", "l": "label", "h": "hostname"}.get(key, key)] = val
    if i < len(toks):
        launcher["image"] = toks[i]
        i += 1
    rest = toks[i:]
    entry = launcher.get("entrypoint")
    if isinstance(entry, str) and entry:
        rest = _split(entry) + rest
    return rest


def _starts(t: str) -> bool:
    base = t.rsplit("/", 1)[-1]
    return bool(_PY_RE.match(base) or base in _LAUNCH_WORDS or _UPPER_ASSIGN_RE.match(t))


def _find_start(toks: list[str]) -> int:
    """Index of the first token that can begin a launch command (skips pasted journal prefixes, ``+`` traces)."""
    if toks and _is_flag(toks[0]):
        return 0
    return next((i for i, t in enumerate(toks) if _starts(t)), 0)


def _segments(toks: list[str]) -> list[list[str]]:
    segs: list[list[str]] = [[]]
    for t in toks:
        if t in _CONTROL:
            segs.append([])
        elif t.endswith(";") and len(t) > 1 and t not in ("\\;",):
            segs[-1].append(t[:-1])
            segs.append([])
        else:
            segs[-1].append(t)
    return [s for s in segs if s]


_REDIRECT_RE = re.compile(r"^\d*(?:>>?|<|>&|&>)(.*)$")


def _drop_redirects(toks: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for t in toks:
        if skip:
            skip = False
            continue
        m = _REDIRECT_RE.match(t)
        if m:
            skip = not m.group(1)  # "> file": the file is the next token
            continue
        out.append(t)
    return out


def _unit_text(text: str, env: dict[str, str]) -> str:
    """From a unit file (or just its ExecStart= line, maybe pasted after other text): the command text;
    Environment= lines go into ``env``. The last non-empty ExecStart= wins (an empty one resets the list)."""
    joined = re.sub(r"\\[ \t]*\r?\n", " ", text)
    if "ExecStart" not in joined:
        return joined
    cmd = None
    for line in joined.splitlines():
        key, eq, val = line.strip().partition("=")
        if eq and key.strip() == "Environment":
            for tok in _split(val):
                k, has, v = tok.partition("=")
                if has:
                    env[k] = v
        elif m := re.search(r"(?:^|\s)ExecStart\s*=(.*)", line):
            cmd = m.group(1).strip() or cmd
    return joined if cmd is None else cmd.lstrip("-@:+!")


def _flag_key(name: str, aliases: dict[str, str]) -> tuple[str, str, str]:
    """``--tp-size`` / ``--compilation-config.mode`` -> (field, ".", sub-option): the engine's field name through
    its aliases, so repeats under different spellings land on one key."""
    key = name.lstrip("-").replace("-", "_")
    base, dot, sub = key.partition(".")
    return aliases.get(base, base), dot, sub


def _flag_list(toks: list[str], i: int) -> tuple[object, int]:
    """A many-valued flag (argparse nargs): every following non-flag token, or True when there is none."""
    following: list[str] = []
    while i < len(toks) and not _is_flag(toks[i]):
        following.append(toks[i])
        i += 1
    return ([_coerce(x) for x in following] if following else True), i


def _flag_value(toks: list[str], i: int, key: str) -> tuple[object, int]:
    """A one-valued flag's value: the next token unless it is a flag (then True); a switch takes only a boolean
    word, so ``--enforce-eager MODEL`` leaves MODEL positional."""
    nxt = toks[i] if i < len(toks) and not _is_flag(toks[i]) else None
    if nxt is None:
        return True, i
    if key in _SWITCHES or key.startswith(_SWITCH_PREFIXES):
        return _BOOL_WORDS.get(nxt, True), i + (nxt in _BOOL_WORDS)  # `--enable-x false` is a value
    return _coerce(nxt), i + 1


def _parse_flags(toks: list[str], engine: str | None, args: dict[str, object], pos: list[str]) -> None:
    aliases = _ALIASES.get(engine or "", {}) if engine else _ALL_ALIASES
    nargs = _NARGS.get(engine or "", _ALL_NARGS)
    i = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if t == "--":
            pos.extend(toks[i:])
            return
        if not _is_flag(t):
            pos.append(t)
            continue
        name, eq, attached = t.partition("=")
        val: object
        m = _OPT_LEVEL_RE.match(name)
        if m:  # vLLM -O0 .. -O3
            name, eq, attached = "-O", "=", m.group(1)
        base, dot, sub = _flag_key(name, aliases)
        key = base + dot + sub if dot else base
        if eq:
            val = _coerce(attached)
        elif key in nargs:
            val, i = _flag_list(toks, i)
        else:
            val, i = _flag_value(toks, i, key)
            if val is True and engine in _NO_NEGATES and key.startswith("no_") and not dot:
                key, val = key[3:], False  # argparse BooleanOptionalAction: --no-enable-prefix-caching
        if dot:  # vLLM dotted sub-options: --compilation-config.mode 3, -O.cudagraph_mode=NONE
            _set_sub_option(args, base, sub, val)
        else:
            args[key] = val


def _set_sub_option(args: dict[str, object], base: str, sub: str, val: object) -> None:
    """``--compilation-config.mode 3``: merge into the dict under ``base`` (``-O.x`` is compilation_config's)."""
    if base == "optimization_level":
        base = "compilation_config"
    cur = args.get(base)
    merged = dict(cur) if isinstance(cur, dict) else {}
    merged[sub] = val
    args[base] = merged


_PREFIX_PROGRAMS = ("sudo", "numactl", "taskset", "nice", "stdbuf", "timeout")
_PREFIX_VALUED = ("-u", "-g", "-n", "-N", "-m", "-C", "-c", "-s", "-k")
_RUNNERS = ("uv", "poetry", "pipenv")
_CONDA_VALUED = ("-n", "--name", "-p", "--prefix")
_SHELLS = ("bash", "sh", "zsh", "dash")
_CONTAINER_TOOLS = ("docker", "podman", "nvidia-docker")


def _skip_options(toks: list[str], j: int, valued: tuple[str, ...] = ()) -> int:
    """The index of the first token from ``j`` on that is not an option (``valued`` options take one value)."""
    while j < len(toks) and toks[j].startswith("-"):
        j += 2 if toks[j] in valued else 1
    return j


def _peel_prefix_program(base: str, toks: list[str]) -> list[str]:
    """``sudo -u x`` / ``numactl --cpunodebind=0`` / ``taskset MASK`` / ``timeout 60`` ...: the command they run."""
    j = _skip_options(toks, 1, _PREFIX_VALUED)
    if base in ("taskset", "timeout") and j < len(toks):
        j += 1  # the mask / duration
    return toks[j:]


def _peel_runner(base: str, toks: list[str]) -> list[str] | None:
    """``uv run`` / ``poetry run`` / ``pipenv run`` / ``conda run -n ENV``: the command they run, or None when
    ``base`` is not such a runner (then it is the program)."""
    if len(toks) < 2 or toks[1] != "run":
        return None
    if base in _RUNNERS:
        return toks[_skip_options(toks, 2) :]
    if base == "conda":
        return toks[_skip_options(toks, 2, _CONDA_VALUED) :]
    return None


def _python_module(toks: list[str]) -> tuple[str | None, int]:
    """``python [-X opt] -m MODULE ...``: the module (None for a script) and where the program's own arguments
    start."""
    j = 1
    while j < len(toks) and toks[j].startswith("-") and toks[j] != "-":
        t = toks[j]
        if t == "-m" and j + 1 < len(toks):
            return toks[j + 1], j + 2
        if t.startswith("-m") and len(t) > 2:
            return t[2:], j + 1
        j += 2 if t in ("-W", "-X") else 1
    return None, j


def _shell_c(
    toks: list[str], engine: str | None, env: dict[str, str], launcher: dict[str, object]
) -> CommandLine | None:
    """``bash -c 'CMD'``: CMD parsed on its own, with the environment and launcher gathered outside it."""
    k = toks.index("-c")
    if k + 1 >= len(toks):
        return None
    inner = parse_command_line(toks[k + 1], engine)
    return CommandLine(
        inner.program,
        inner.module,
        {**env, **inner.env},
        inner.args,
        inner.positionals,
        inner.engine,
        {**launcher, **inner.launcher},
    )


def _peel_launchers(
    toks: list[str], engine: str | None, env: dict[str, str], launcher: dict[str, object]
) -> tuple[str | None, str | None, list[str]] | CommandLine:
    """Take off what runs the engine (``VAR=`` prefixes, ``env``, ``exec``, ``sudo``, ``uv run``, ``docker run``,
    the interpreter): (program, module, the program's arguments), or the whole result for ``bash -c``."""
    while toks:
        head = toks[0]
        base = head.rsplit("/", 1)[-1]
        if m := _ASSIGN_RE.match(head):
            env[m.group(1)] = m.group(2)
            toks = toks[1:]
        elif base == "env":
            toks = _peel_env(toks, env)
        elif base in _WRAPPERS:
            toks = toks[1:]
        elif base in _PREFIX_PROGRAMS:
            toks = _peel_prefix_program(base, toks)
        elif (inner := _peel_runner(base, toks)) is not None:
            toks = inner
        elif base in _SHELLS and "-c" in toks[1:3]:
            inner_cmd = _shell_c(toks, engine, env, launcher)
            return inner_cmd if inner_cmd is not None else (None, None, [])  # `bash -c` with nothing after it
        elif base in _CONTAINER_TOOLS:
            toks = _peel_docker(toks, env, launcher)
            if not toks or _is_flag(toks[0]):  # image's own entrypoint (vllm/vllm-openai takes flags directly)
                return None, None, toks
        elif _PY_RE.match(base):
            module, j = _python_module(toks)
            return head, module, toks[j:]
        elif _is_flag(head):
            return None, None, toks
        else:
            return head, None, toks[1:]
    return None, None, []


def parse_command_line(text: str, engine: str | None = None) -> CommandLine:
    """A launch command (unit-file ``ExecStart=``, shell line, ``docker run``, ``env``/``VAR=`` prefixes) to its
    program, module, environment and flags. Flags are keyed by the engine's field name (``--tp`` -> ``tp_size`` on
    SGLang, ``-tp`` -> ``tensor_parallel_size`` on vLLM); a flag with no value is ``True``; the last repeat wins;
    quoted JSON values become dicts/lists. ``engine`` overrides detection (module, program or image name)."""
    env: dict[str, str] = {}
    launcher: dict[str, object] = {}
    toks = _drop_redirects(_launch_segment(_unit_text(text, env), env))
    toks = toks[_find_start(toks) :]
    peeled = _peel_launchers(toks, engine, env, launcher)
    if isinstance(peeled, CommandLine):
        return peeled
    program, module, rest = peeled
    eng = engine or _guess_engine(program, module, launcher, rest)
    args: dict[str, object] = {}
    pos: list[str] = []
    _parse_flags(rest, eng, args, pos)
    return CommandLine(program, module, env, args, pos, eng, launcher)


def _launch_segment(body: str, env: dict[str, str]) -> list[str]:
    """The shell segment that launches the engine (`cd /opt/sglang && exec python -m sglang...`, `... | tee log`);
    `export A=1` segments around it add to `env`."""
    segs = _segments(_split(body)) or [[]]
    cands = [s for s in segs if s and s[0] not in _NOT_LAUNCH and any(map(_starts, s))]
    chosen = next((s for s in cands if _engine_of(*s[:40])), cands[0] if cands else segs[0])
    for s in segs:  # `export A=1; python ...` / `A=1 && ...`
        if s is not chosen and s[0] == "export":
            for t in s[1:]:
                if m := _ASSIGN_RE.match(t):
                    env[m.group(1)] = m.group(2)
    return chosen


def _guess_engine(program: str | None, module: str | None, launcher: dict, rest: list[str]) -> str | None:
    """The engine from the module, program, image or script name; for a bare fragment ("--model-path X --tp 2"),
    from the flags only one engine has."""
    script = rest[0] if program and _PY_RE.match(program.rsplit("/", 1)[-1]) and not module and rest else None
    eng = _engine_of(module, program and program.rsplit("/", 1)[-1], str(launcher.get("image") or ""), script)
    if eng is None:
        names = {t.lstrip("-").partition("=")[0].replace("-", "_") for t in rest if _is_flag(t)}
        hits = {e: len(names & hints) for e, hints in _ENGINE_HINTS.items()}
        if max(hits.values()) > 0 and len(set(hits.values())) > 1:
            eng = max(hits, key=hits.__getitem__)
    return eng
