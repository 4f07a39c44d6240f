"""core/lean.py's `dataclass` (start-up: no exec'd __repr__/__eq__/__hash__) behaves as dataclasses.dataclass does:
the same repr, equality, hash (or unhashability), frozenness, fields, replace() and a class's own methods kept."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from logdoctor.core.lean import dataclass as lean

BODIES = {
    "plain": "    a: int\n    b: list = field(default_factory=list, repr=False)\n    c: int = field(default=0, compare=False)",
    "default": "    a: int = 1",
    "empty": "    pass",
    "own_eq": "    a: int\n    def __eq__(self, o): return True",
    "own_hash": "    a: int\n    def __hash__(self): return 7",
    "own_repr": "    a: int\n    def __repr__(self): return 'mine'",
    "hash_field": "    a: int\n    b: int = field(default=0, hash=False)",
}
ARGS = {"plain": (1, [2]), "default": (), "empty": (), "own_eq": (1,), "own_hash": (1,), "own_repr": (1,)}
OPTIONS = [{}, {"frozen": True}, {"slots": True}, {"frozen": True, "slots": True}]


def _pair(options: dict, body: str):
    out = []
    for deco in (dataclasses.dataclass, lean):
        ns: dict = {}
        exec(f"from __future__ import annotations\nfrom dataclasses import field\nclass C:\n{body}\n", ns)  # noqa: S102
        out.append(deco(**options)(ns["C"]) if options else deco(ns["C"]))
    return out


def _hash(obj):
    try:
        return hash(obj)
    except TypeError as e:
        return f"unhashable: {e}"


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "default")
@pytest.mark.parametrize("name", sorted(BODIES))
def test_same_behaviour_as_dataclasses(options, name):
    std, ours = _pair(options, BODIES[name])
    args = ARGS.get(name, (1,))
    s, o = std(*args), ours(*args)
    assert repr(s) == repr(o)
    assert (std.__hash__ is None) == (ours.__hash__ is None)
    if std.__hash__ is not None and std.__hash__ is not object.__hash__:
        assert _hash(s) == _hash(o)
    assert (s == std(*args)) == (o == ours(*args))
    assert (s == 5) == (o == 5)
    assert (s != std(*args)) == (o != ours(*args))
    assert [f.name for f in dataclasses.fields(std)] == [f.name for f in dataclasses.fields(ours)]
    assert dataclasses.is_dataclass(o)
    assert dataclasses.asdict(s) == dataclasses.asdict(o)
    assert repr(dataclasses.replace(s)) == repr(dataclasses.replace(o))
    assert ours.__repr__.__qualname__ == std.__repr__.__qualname__
    if options.get("frozen") and args:
        with pytest.raises(dataclasses.FrozenInstanceError):
            o.a = 3  # type: ignore[misc]


def test_unequal_fields_and_other_classes():
    std, ours = _pair({}, BODIES["plain"])
    assert ours(1, [2]) != ours(2, [2])
    assert ours(1, [2], c=5) == ours(1, [2], c=9)  # compare=False is not compared
    std2, ours2 = _pair({}, BODIES["plain"])
    assert ours(1, [2]) != ours2(1, [2])  # another class with the same fields: not equal, as the standard one


def test_recursive_repr():
    std, ours = _pair({}, "    a: object = None")
    s, o = std(), ours()
    s.a, o.a = s, o
    assert repr(s) == repr(o) == "C(a=...)"


def test_subclass_fields_in_repr_and_eq():
    std, ours = _pair({}, "    a: int = 1")
    sub_std = dataclasses.dataclass(type("D", (std,), {"__annotations__": {"b": "int"}, "b": 2}))
    sub_ours = lean(type("D", (ours,), {"__annotations__": {"b": "int"}, "b": 2}))
    assert repr(sub_std()) == repr(sub_ours()) == "D(a=1, b=2)"
    assert sub_ours() == sub_ours() and sub_ours() != sub_ours(b=3)


def test_pickles_like_a_dataclass():
    from logdoctor.verdict.diagnosis import FixStep

    one = FixStep("mem_fraction_static", "--mem-fraction-static", 0.9, 0.85, "less for the KV pool")
    assert pickle.loads(pickle.dumps(one)) == one  # noqa: S301 - our own bytes
    assert one != dataclasses.replace(one, to=0.8)
