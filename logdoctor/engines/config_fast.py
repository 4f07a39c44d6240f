"""A fast path for the common, well-formed config dumps, so `explain` does not import pyparsing and build its
grammars (~30 ms, the largest fixed cost on a 140-line log) when a dump is a plain literal.

A dump is taken here only when it parses as one Python expression whose every value is a plain literal written
the way the pyparsing grammar reads it (quoted strings without escapes, decimal numbers, True/False/None, and
lists/tuples/dicts of those) and nothing follows its closing bracket. Anything else — a cut line, raw objects such
as ``torch.bfloat16``, JSON keywords, escapes, sets — goes to `config_dump`, unchanged. tests/test_config_fast.py
checks that both paths give identical values on every dump in the fixtures and the dev corpus.
"""

from __future__ import annotations

import ast

from logdoctor.core import rxcache
from logdoctor.engines.config_types import ConfigDump

_NUM = rxcache.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_STR = rxcache.compile(r"'[^'\\\n]*'|\"[^\"\\\n]*\"")
_NO = object()


def _signed(node, src: str):
    """``-1`` / ``+0.5``: a number with its sign (the grammar reads the sign as part of the number)."""
    if (
        type(node.op) not in (ast.USub, ast.UAdd)
        or type(node.operand) is not ast.Constant
        or type(node.operand.value) not in (int, float)
    ):
        return _NO
    seg = src[node.col_offset : node.end_col_offset]
    if not _NUM.fullmatch(seg):
        return _NO
    num = node.operand.value
    assert isinstance(num, (int, float))
    return -num if type(node.op) is ast.USub else num


def _sequence(node, src: str):
    """A list or tuple whose every element is a plain literal."""
    out = [_value(e, src) for e in node.elts]
    if any(v is _NO for v in out):
        return _NO
    return out if type(node) is ast.List else tuple(out)


def _mapping(node, src: str):
    """A dict of plain literals (no ``**`` splats, no list/tuple keys)."""
    if any(k is None for k in node.keys):
        return _NO
    d = {}
    for k, v in zip(node.keys, node.values):
        kv, vv = _value(k, src), _value(v, src)
        if kv is _NO or vv is _NO or isinstance(kv, (list, tuple)):
            return _NO
        d[kv] = vv
    return d


# the readers of the non-scalar nodes; any other node (a name, a call, a set, an operator) sends the dump to the
# grammar
_READERS = {ast.UnaryOp: _signed, ast.List: _sequence, ast.Tuple: _sequence, ast.Dict: _mapping}


def _value(node, src: str):
    """A node's value, or _NO unless it is a literal written the way the grammar reads it. Scalars (most nodes) are
    read inline, as this runs per node of every dump: a quoted string without escapes or implicit concatenation, a
    decimal number (not ``0x10``, ``1_000``, ``1j``), True/False/None."""
    if type(node) is not ast.Constant:
        reader = _READERS.get(type(node))
        return _NO if reader is None else reader(node, src)
    v = node.value
    seg = src[node.col_offset : node.end_col_offset]
    if v is None or v is True or v is False:
        return v if seg in ("None", "True", "False") else _NO
    if type(v) is str:
        return v if _STR.fullmatch(seg) else _NO
    if type(v) in (int, float):
        return v if _NUM.fullmatch(seg) else _NO
    return _NO


def _expr(text: str):
    text = text.rstrip()
    if "\n" in text or "\\" in text:
        return None
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def fast_dict(text: str) -> dict | None:
    """``{...}`` → its values, or None when the grammar must decide."""
    node = _expr(text)
    if type(node) is not ast.Dict:
        return None
    v = _value(node, text.rstrip())
    return v if isinstance(v, dict) and all(type(k) is str for k in v) else None


def fast_repr(text: str) -> dict | None:
    """``Name(key=value, ...)`` → its values, or None when the grammar must decide."""
    node = _expr(text)
    if type(node) is not ast.Call or type(node.func) is not ast.Name or node.args:
        return None
    src = text.rstrip()
    out = {}
    for kw in node.keywords:
        if kw.arg is None or kw.arg in out:
            return None
        v = _value(kw.value, src)
        if v is _NO:
            return None
        out[kw.arg] = v
    return out


def parse_server_args(text: str):
    """config_dump.parse_server_args, without pyparsing when the dump is a plain literal."""
    i = text.find("ServerArgs(")
    j = text.find("server_args=")
    got = None
    if i >= 0 and text[i + len("ServerArgs(") :].lstrip().startswith("{"):
        pass  # ServerArgs({...}): rare; the grammar handles it
    elif i >= 0 and (j < 0 or i <= j + len("server_args=")):
        vals = fast_repr(text[i:])
        got = (vals, "serverargs-repr") if vals is not None else None
    elif j >= 0:
        k = text.find("{", j)
        if k >= 0 and not text[j + len("server_args=") : k].strip():
            vals = fast_dict(text[k:])
            got = (vals, "dict") if vals is not None else None
    if got is not None:
        return ConfigDump(got[0], False, got[1])
    from logdoctor.engines import config_dump

    return config_dump.parse_server_args(text)


def parse_py_dict(text: str):
    """config_dump.parse_py_dict, without pyparsing when the dict is a plain literal."""
    j = text.find("non-default args:")
    k = text.find("{", j if j >= 0 else 0)
    if k >= 0:
        vals = fast_dict(text[k:])
        if vals is not None:
            return ConfigDump(vals, False, "dict")
    from logdoctor.engines import config_dump

    return config_dump.parse_py_dict(text)
