"""Canonical levers <-> engine flags, defaults, and the value arithmetic of the fix planner.

Why: rules and the planner speak of levers (``mem_fraction``, ``graphs_off``, ...; design.md "Levers") so that one
rule serves SGLang and vLLM and survives flag renames. This module is the single table that maps each lever to the
engine's own flag (by version: SGLang renamed its CUDA-graph flags in 0.5.17), its python field names (to read a
config dump or a command line back), its default, and the bounds that ``step`` respects. Facts:
``shared/reference/engines.md`` section D (SGLang 0.5.10/0.5.23, vLLM 0.33). Pure: no I/O, the table is immutable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from logdoctor.core import rxcache
from logdoctor.core.errors import InputError
from logdoctor.core.lean import dataclass, field, replace
from logdoctor.core.vocab import OPS
from logdoctor.engines import ENGINES as _REGISTRY
from logdoctor.engines.spelling import Field, Side, Spelling

__all__ = [
    "Spelling",
    "Field",
    "Side",
    "Lever",
    "LEVERS",
    "ENGINES",
    "OPS",
    "flag_for",
    "render",
    "default_for",
    "lever_for_field",
    "levers_from_config",
    "step",
    "version_tuple",
    "BadValue",
    "check_value",
    "check_tokens",
]


@dataclass(frozen=True)
class Lever:
    """A canonical knob. ``kind``: fraction | float | int | bool | str | enum. ``growth`` (ints): how ``raise``
    moves -- double, pow2 (parallel sizes) or increment (ports). ``align``: large results of int arithmetic are
    multiples of it. ``up``/``down``: additive steps for fractions, factor for floats."""

    name: str
    kind: str
    bounds: tuple[float | None, float | None] = (None, None)
    growth: str = "double"
    align: int = 1
    up: float = 0.0
    down: float = 0.0
    choices: tuple[str, ...] = ()
    note: str = ""
    sides: Mapping[str, Side] = field(default_factory=dict, compare=False)  # engine -> Side, from the registry

    def side(self, engine: str | None) -> Side | None:
        return self.sides.get((engine or "").lower())


# the canonical levers: kind, bounds and arithmetic; each engine's spelling is in engines/<name>.py LEVER_SIDES,
# and what is particular to one engine's handling of a lever in its LEVER_NOTES (Engine.lever_notes)
_CANONICAL: tuple[Lever, ...] = (
    Lever("mem_fraction", "fraction", bounds=(0.05, 0.95), up=0.04, down=0.05),
    Lever("context_length", "int", bounds=(1, None), align=1024),
    Lever("max_running", "int", bounds=(1, None)),
    Lever("prefill_chunk", "int", bounds=(1, None), align=256),
    Lever("max_prefill_tokens", "int", bounds=(1, None)),
    Lever("max_total_tokens", "int", bounds=(1, None)),
    Lever("graph_max_bs", "int", bounds=(1, None), growth="pow2"),
    Lever("graphs_off", "bool"),
    Lever("piecewise_graph_off", "bool"),
    Lever("prefill_graph_max", "int", bounds=(1, None), growth="pow2"),
    Lever("torch_compile", "bool"),
    Lever("torch_compile_max_bs", "int", bounds=(1, None), growth="pow2"),
    Lever("tp_size", "int", bounds=(1, None), growth="pow2"),
    Lever("pp_size", "int", bounds=(1, None), growth="pow2"),
    Lever("dp_size", "int", bounds=(1, None), growth="pow2"),
    Lever("ep_size", "int", bounds=(1, None), growth="pow2"),
    Lever("expert_parallel", "bool"),
    Lever("attention_backend", "str"),
    Lever("custom_all_reduce_off", "bool"),
    Lever("prefix_cache_off", "bool"),
    Lever("mamba_ratio", "float", bounds=(0.05, 4.0), up=1.5, down=1.5, note="mamba-state memory / full-KV memory"),
    Lever("max_mamba_cache", "int", bounds=(1, None)),
    Lever("mamba_strategy", "enum", choices=("auto", "no_buffer", "extra_buffer")),
    Lever("port", "int", bounds=(1, 65535), growth="increment"),
    Lever("nccl_port", "int", bounds=(1, 65535), growth="increment"),
    Lever("dist_init_addr", "str"),
    Lever("kv_cache_dtype", "enum", choices=("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16")),
    Lever("quantization", "str"),
    Lever("dtype", "enum", choices=("auto", "half", "float16", "bfloat16", "float", "float32")),
    Lever("trust_remote_code", "bool"),
    Lever("speculative_algorithm", "str"),
    Lever("spec_topk", "int", bounds=(1, 64), growth="pow2", note="draft-tree branches per step (EAGLE)"),
    Lever("page_size", "int", bounds=(1, 4096), growth="pow2", note="tokens per KV-cache page"),
    Lever(
        "max_lora_rank",
        "int",
        bounds=(1, 1024),
        growth="pow2",
        note="the largest LoRA adapter rank served (vLLM: up to 512)",
    ),
    Lever("max_seq_len_to_capture", "int", bounds=(1, None), align=1024),
    Lever("swap_space", "int", bounds=(0, None), note="GiB of CPU swap per GPU"),
    Lever(
        "cpu_offload",
        "int",
        bounds=(0, None),
        note="GiB of weights kept in host RAM per GPU; host memory, not GPU memory",
    ),
    Lever("watchdog_timeout", "int", bounds=(1, None)),
    Lever("dist_timeout", "int", bounds=(1, None)),
    Lever(
        "shm", "str", note="no engine flag: docker --shm-size / the host's /dev/shm (CommandLine.launcher['shm_size'])"
    ),
)


def _with_sides(lv: Lever) -> Lever:
    """The canonical lever with each registered engine's spelling of it (engines/<name>.py LEVER_SIDES)."""
    return replace(
        lv,
        sides=MappingProxyType(
            {e.name: e.lever_sides[lv.name] for e in _REGISTRY.values() if lv.name in e.lever_sides}
        ),
    )


def _check_sides() -> None:
    known = {lv.name for lv in _CANONICAL}
    for e in _REGISTRY.values():
        unknown = set(e.lever_sides) - known
        if unknown:
            raise ValueError(f"engine {e.name}: spellings for unknown levers {sorted(unknown)}")


_check_sides()
_TABLE: tuple[Lever, ...] = tuple(_with_sides(lv) for lv in _CANONICAL)
# engines with flag spellings (the fix planner can render their changes)
ENGINES: tuple[str, ...] = tuple(e.name for e in _REGISTRY.values() if e.lever_sides)
LEVERS: Mapping[str, Lever] = MappingProxyType({lv.name: lv for lv in _TABLE})


def _field_index() -> Mapping[tuple[str, str], str]:
    """(engine, field-or-flag name) -> lever; flags are indexed by their dest name (``--enforce-eager`` ->
    ``enforce_eager``) so a command line's keys resolve even where no dump shows the field."""
    idx: dict[tuple[str, str], str] = {}
    for lv in _TABLE:
        for eng in ENGINES:
            side = lv.side(eng)
            if side is None:
                continue
            names = [f.path for f in side.fields] + [_dest(sp.flag) for sp in side.flags]
            for n in names:
                idx.setdefault((eng, n), lv.name)
    return MappingProxyType(idx)


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


_FIELDS = _field_index()


# --------------------------------------------------------------------------------------------------------------------
# versions and rendering


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"v0.5.10.post1"`` -> (0, 5, 10, 0); None when absent or unreadable. Padded so that 0.33 == 0.33.0.

    Bounds as a timeline may report them count too: ``>=0.5.23`` / ``==`` / ``~=`` -> that version; ``<0.5.17`` ->
    just below it (every 0.5.16.x), which is all a version range here needs."""
    if not version:
        return None
    m = re.match(r"\s*(<=|>=|==|~=|<|>)?\s*v?(\d+(?:\.\d+)*)", str(version))
    if not m:
        return None
    t = list(int(x) for x in m.group(2).split("."))[:4]
    t += [0] * (4 - len(t))
    if m.group(1) == "<":
        i = max((k for k, x in enumerate(t) if x), default=None)
        if i is None:
            return None
        t[i] -= 1
        t[i + 1 :] = [10**6] * (3 - i)
    return tuple(t)


def _in_range(sp: Spelling, vt: tuple[int, ...]) -> bool:
    lo, hi = version_tuple(sp.since), version_tuple(sp.until)
    return (lo is None or vt >= lo) and (hi is None or vt < hi)


def _lever(name: str) -> Lever:
    try:
        return LEVERS[name]
    except KeyError:
        raise ValueError(f"unknown lever {name!r}") from None


def _pick(side: Side, version: str | None, config: Mapping[str, object] | None) -> Spelling | None:
    """The spelling in force: by version when known; else the classic one, unless the config's fields show a
    newer one (a field only newer builds print is as good as a version number); with the version unknown and no
    classic spelling at all, the newest (an engine line without a version is most likely a current build's)."""
    cfg = config or {}
    vt = version_tuple(version)
    chosen = None
    for sp in side.flags:
        if sp.needs_field and sp.needs_field not in cfg:
            continue
        if vt is not None:
            ok = _in_range(sp, vt)
        else:
            ok = sp.since is None or bool(sp.hint_field and sp.hint_field in cfg)
        if ok:
            chosen = sp  # later spellings are newer: the last that applies wins
    if chosen is None and vt is None:
        chosen = next((sp for sp in reversed(side.flags) if not sp.needs_field or sp.needs_field in cfg), None)
    return chosen


def missing_flag_note(lever: str, engine: str, version: str | None) -> str | None:
    """Why a lever the engine has no flag for in this version cannot be proposed, with the engine's own note on it
    (vLLM before --attention-backend: the VLLM_ATTENTION_BACKEND environment variable), or None when the engine
    never had one."""
    side = _lever(lever).side(engine)
    if side is None or not side.flags or version_tuple(version) is None or _pick(side, version, None) is not None:
        return None
    e = _REGISTRY.get(engine)
    extra = e.lever_notes.get(lever) if e is not None else None
    flags = "/".join(dict.fromkeys(sp.flag for sp in side.flags))
    return f"{engine} {version} has no {flags} flag" + (f" ({extra})" if extra else "")


def flag_for(
    lever: str, engine: str, version: str | None = None, config: Mapping[str, object] | None = None
) -> str | None:
    """The engine's own spelling of ``lever`` (``--mem-fraction-static``), or None where it has no flag.

    For a switch-like lever the text is what turns it away from its default, as a store-true switch would:
    ``--disable-cuda-graph``; SGLang 0.5.17+ ``--cuda-graph-backend-decode disabled`` (chosen only when ``config``,
    the service's raw field map, shows that field in use, since the classic flag stays a deprecated alias);
    vLLM ``-O0`` for torch_compile. ``render`` gives the exact tokens for any value."""
    lv = _lever(lever)
    side = lv.side(engine)
    sp = _pick(side, version, config) if side else None
    if sp is None:
        return None
    if sp.values:
        default = default_for(lever, engine, version)
        flip = (not default) if isinstance(default, bool) else True
        word = next((w for v, w in sp.values if v is flip), None)
        if word is not None:
            return sp.flag + word if sp.attach else f"{sp.flag} {word}"
    return sp.flag


def _fmt(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(round(v, 6))
    if isinstance(v, (dict, list, tuple)):
        import json  # here, not at import: a plain explain never formats a structured value (~1.5 ms)

        return json.dumps(v, separators=(",", ":"))
    return str(v)


def render(
    lever: str, engine: str, value: object, *, version: str | None = None, config: Mapping[str, object] | None = None
) -> list[str] | None:
    """Command-line tokens that put ``lever`` at ``value``: ``["--mem-fraction-static", "0.85"]``,
    ``["--disable-cuda-graph"]``, ``["-O0"]``; ``[]`` = drop the switch (a switch turned off); None = this engine
    cannot express it with a flag."""
    side = _lever(lever).side(engine)
    sp = _pick(side, version, config) if side else None
    if sp is None:
        return None
    if sp.switch:
        return [sp.flag] if value is True else []
    if sp.values:
        word = next((w for v, w in sp.values if v == value and type(v) is type(value)), None)
        if word is None:
            return None
        return [sp.flag + word] if sp.attach else [sp.flag, word]
    if value is None:
        return []
    return [sp.flag + _fmt(value)] if sp.attach else [sp.flag, _fmt(value)]


def default_for(lever: str, engine: str, version: str | None = None) -> object:
    """The engine's default for ``lever`` at ``version`` (latest known when None); None = resolved at start-up
    from GPU, model and TP (the log's own summary lines then hold the value) or no such lever on that engine."""
    side = _lever(lever).side(engine)
    if side is None:
        return None
    vt = version_tuple(version)
    value = side.defaults[-1][1]
    if vt is not None:
        for since, v in side.defaults:
            lo = version_tuple(since)
            if lo is None or vt >= lo:
                value = v
    return value


def lever_for_field(engine: str, field: str) -> str | None:
    """The lever a python field (``gpu_memory_utilization``, ``compilation_config.mode``) or flag
    (``--tp-size``) of ``engine`` sets, or None."""
    return _FIELDS.get(((engine or "").lower(), _dest(field)))


# --------------------------------------------------------------------------------------------------------------------
# reading a config

_MISSING = object()


def _get(raw: Mapping[str, object], path: str) -> object:
    cur: object = raw
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _as_kind(lv: Lever, v: object) -> object:
    """Lenient coercion of a read value to the lever's kind (command lines give strings); unreadable -> as is."""
    if v is None or isinstance(v, bool) and lv.kind == "bool":
        return v
    try:
        if lv.kind == "bool":
            if isinstance(v, str) and v.lower() in ("true", "false", "1", "0"):
                return v.lower() in ("true", "1")
            return bool(v) if isinstance(v, (int, float)) else v
        if lv.kind == "int" and not isinstance(v, bool):
            if isinstance(v, float) and v.is_integer():
                return int(v)
            return int(v) if isinstance(v, str) and re.fullmatch(r"[-+]?\d+", v.strip()) else v
        if lv.kind in ("fraction", "float") and isinstance(v, (str, int)) and not isinstance(v, bool):
            return float(v)
    except (TypeError, ValueError):
        return v
    return v


def _read(lv: Lever, side: Side, raw: Mapping[str, object]) -> object:
    """Value of the lever in ``raw``: the first field holding information (for switches: on if any field says
    on, since every spelling turns the same thing off); ``_MISSING`` when no field is present."""
    seen = False
    found: list[object] = []
    for f in side.fields:
        v = _get(raw, f.path)
        if v is _MISSING:
            continue
        seen = True
        if f.read is not None:
            v = f.read(v)
        v = _as_kind(lv, v)
        if v is not None:
            found.append(v)
    if not seen:
        return _MISSING
    if not found:
        return None
    if lv.kind == "bool" and any(x is True for x in found):
        return True
    return found[0]


def levers_from_config(
    engine: str, version: str | None, raw: Mapping[str, object], *, fill_defaults: bool = False
) -> dict[str, object]:
    """Canonical lever values from a raw field map (a config dump's ``values`` or a ``CommandLine.args``).

    A field present with None (SGLang ``context_length=None``) maps to None: set to "auto". With
    ``fill_defaults``, absent levers get the engine's default where one is fixed -- needed for vLLM, whose
    ``non-default args`` omits every flag left at its default, and for command lines."""
    norm = {str(k).replace("-", "_"): v for k, v in raw.items()}
    out: dict[str, object] = {}
    for lv in _TABLE:
        side = lv.side(engine)
        if side is None:
            continue
        v = _read(lv, side, norm)
        if v is not _MISSING:
            out[lv.name] = v
        elif fill_defaults:
            d = default_for(lv.name, engine, version)
            if d is not None:
                out[lv.name] = d
    return out


# --------------------------------------------------------------------------------------------------------------------
# value arithmetic


def _key(v: object) -> object:
    """Comparison key: floats to 6 places, words case-insensitive (FLASHINFER == flashinfer)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, str):
        return v.strip().lower()
    return v


def _number(v: object) -> float | int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v


def _align(lv: Lever, v: float, up: bool) -> int:
    n = int(v)
    a = lv.align
    if a > 1 and n >= 4 * a:
        n = (math.ceil(v / a) if up else math.floor(v / a)) * a
    return n


def _candidates(lv: Lever, cur: float, op: str, lo: float, hi: float) -> Iterable[float]:
    """Successive values in the direction of ``op`` from ``cur``; the last one is the bound itself."""
    up = op in ("raise", "double")
    x = cur
    for _ in range(64):
        nx = _next_int(lv, x, op, up) if lv.kind == "int" else round(_next_real(lv, x, op, up), 2)
        if (up and nx >= hi) or (not up and nx <= lo) or nx == x:
            edge = hi if up else lo
            if math.isfinite(edge):
                yield edge
            return
        yield nx
        x = nx


def _next_int(lv: Lever, x: float, op: str, up: bool) -> float:
    """One step of an integer lever: doubling/halving, the next power of two, or one more/less; then aligned."""
    if op == "double" or (op == "raise" and lv.growth == "double"):
        nx = x * 2
    elif op == "halve" or (op == "lower" and lv.growth == "double"):
        nx = x // 2
    elif lv.growth == "pow2":
        p = 1 << max(int(x), 1).bit_length()  # next power of two above x
        nx = p if up else (p >> 2 if p >> 1 == x else p >> 1)
    else:  # increment
        nx = x + 1 if up else x - 1
    return _align(lv, nx, up)


def _next_real(lv: Lever, x: float, op: str, up: bool) -> float:
    """One step of a fraction (additive: lv.up / lv.down) or float lever (multiplicative), before rounding."""
    if op == "halve":
        return x / 2
    if op == "double":
        return x * 2
    if lv.kind == "fraction":
        return x + lv.up if up else x - lv.down
    return x * lv.up if up else x / lv.down  # float: multiplicative steps


def step(
    lever: str,
    current: object,
    op: str,
    *,
    avoid: Iterable[object] = (),
    bound: float | int | None = None,
    value: object = None,
    at_least: float | None = None,
) -> object | None:
    """The next value for ``lever`` under ``op`` (``set`` takes ``value``), or None when no new value is possible.

    Never returns ``current`` or a value in ``avoid`` (values already tried on this service): it keeps stepping
    in the same direction until the lever's bounds, further limited by ``bound`` (a cap for raise/double, a
    floor for lower/halve), run out. Relative ops need a numeric ``current`` (None, "auto", or SGLang's -1 =
    disabled give None). Examples: raise mem_fraction 0.88 -> 0.92 (cap 0.95); lower 0.9 -> 0.85; halve
    context_length 131072 -> 65536 (multiples of 1024 when large); raise tp_size 2 -> 4 (powers of two).
    ``at_least`` (raise/double): the smallest value that can work, as the log's own numbers say (a step short of it
    would fail the same way): the first step at or above it, e.g. raise mem_fraction 0.8 with at_least 0.875 -> 0.88."""
    lv = _lever(lever)
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    banned = {_key(a) for a in avoid}
    lo = lv.bounds[0] if lv.bounds[0] is not None else -math.inf
    hi = lv.bounds[1] if lv.bounds[1] is not None else math.inf
    if bound is not None:
        if op in ("raise", "double"):
            hi = min(hi, bound)
        elif op in ("lower", "halve"):
            lo = max(lo, bound)

    def fresh(v: object) -> bool:
        if v is None or _key(v) == _key(current) or _key(v) in banned:
            return False
        n = _number(v)
        return n is None or lo <= n <= hi

    if op == "set":
        v = _as_kind(lv, value)
        return v if fresh(v) else None
    if op in ("enable", "disable"):
        if lv.kind != "bool":
            raise ValueError(f"{op} applies to switches; {lever} is {lv.kind}")
        v = op == "enable"
        return v if _key(v) != _key(current) and v not in banned else None
    return _relative_step(lv, current, op, lo, hi, fresh, at_least)


def _relative_step(lv: Lever, current: object, op: str, lo: float, hi: float, fresh, at_least: float | None):
    """raise/lower/halve/double: the first candidate past `current` in the op's direction that is fresh (and, going
    up, at least `at_least`)."""
    cur = _number(current)
    if lv.kind not in ("int", "fraction", "float") or cur is None or cur <= 0:
        return None
    if lv.kind == "int":
        if cur != int(cur):  # 0.5 requests is no value an engine accepts
            return None
        cur = int(cur)
    up = op in ("raise", "double")
    floor = at_least if up and at_least is not None else -math.inf
    for v in _candidates(lv, cur, op, lo, hi):
        v = int(v) if lv.kind == "int" else float(v)
        if (v > cur if up else v < cur) and v >= floor and fresh(v):
            return v
    return None


# --------------------------------------------------------------------------------------------------------------------
# values that reach a command line (issue 18, hostile-inputs F1)


class BadValue(InputError):
    """A fix value that is not one token of its lever's type: refused (exit 2), the message names where it came
    from (the rule, or the log line a rule captured it from)."""


# a name: letters, digits and `_ . : -`, never starting with `-` (no option), no whitespace, quote or shell
# metacharacter; at most 64 characters. Backends, quantization methods, speculative algorithms, host:port.
_NAME = rxcache.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
_DECIMAL = re.compile(r"\d{1,12}(?:\.\d{1,12})?")
_TOKEN = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_.:=-]{0,127}")  # an engine flag or a rendered value


def _describe(lv: Lever) -> str:
    lo, hi = lv.bounds
    rng = f" in [{lo}, {hi}]" if lo is not None and hi is not None else f" >= {lo}" if lo is not None else ""
    if lv.kind == "fraction":
        return "a decimal fraction in (0, 1]"
    if lv.kind == "float":
        return f"a decimal number{rng}"
    if lv.kind == "int":
        return f"an integer{rng}"
    if lv.kind == "bool":
        return "true or false (a switch)"
    if lv.kind == "enum":
        return "one of " + ", ".join(lv.choices)
    return "a name (letters, digits, _ . : -, not starting with -)"


def check_value(lever: str, value: object, *, source: str = "") -> object:
    """The one check every fix value passes before it can reach a command line (the planner for rule and
    log-captured values, `fix` again before it edits a file): exactly one token of the lever's type -- a number in
    the lever's range, an integer, a switch, a word of the lever's fixed set, or a name. Returns the value in the
    lever's type (``"0.92"`` -> 0.92); raises BadValue naming ``source`` otherwise. None (no value) passes."""
    lv = _lever(lever)
    if value is None:
        return None
    out: object = _BAD
    if lv.kind == "bool":
        out = value if isinstance(value, bool) else _BAD
    elif lv.kind in ("int", "fraction", "float"):
        out = _numeric(lv, value)
    elif lv.kind == "enum":
        word = str(value) if isinstance(value, str) else ""
        out = next((c for c in lv.choices if c.lower() == word.lower()), _BAD)
    elif isinstance(value, str) and _NAME.fullmatch(value):
        out = value
    if out is _BAD:
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "...'"
        where = f"{source}: " if source else ""
        raise BadValue(f"{where}fix value {shown} for {lever} refused: expected {_describe(lv)}")
    return out


_BAD = object()


def _numeric(lv: Lever, value: object) -> object:
    if isinstance(value, bool):
        return _BAD
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value):
            return _BAD
        num: float | int = float(value) if "." in value else int(value)
    elif isinstance(value, (int, float)):
        num = value
    else:
        return _BAD
    if not math.isfinite(num):
        return _BAD
    if lv.kind == "int":
        if isinstance(num, float):
            if not num.is_integer():
                return _BAD
            num = int(num)
    else:
        num = float(num)
        if lv.kind == "fraction" and not 0 < num <= 1:
            return _BAD
    # a fraction's range is its type's, (0, 1]: `bounds` is where the planner stops stepping, not what an engine
    # accepts (vLLM takes --gpu-memory-utilization 0.97, and lowering 0.99 -> 0.97 is a fix)
    lo, hi = lv.bounds if lv.kind != "fraction" else (None, None)
    if (lo is not None and num < lo) or (hi is not None and num > hi):
        return _BAD
    return num


def check_tokens(lever: str, tokens: list[str]) -> list[str]:
    """Command-line tokens about to be written for ``lever`` (a flag, and its rendered value): each must be one
    plain token, and only the first may start with ``-``. Raises BadValue otherwise."""
    for i, t in enumerate(tokens):
        if not _TOKEN.fullmatch(t) or (i > 0 and t.startswith("-")):
            raise BadValue(
                f"refused to write {' '.join(map(repr, tokens))} for {lever}: {t!r} is not one plain "
                f"token of the lever's type"
            )
    return tokens
