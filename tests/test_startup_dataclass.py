"""core/lean.py's `dataclass` (start-up: no exec'd __repr__/__eq__/__hash__) behaves as dataclasses.dataclass does:
the same repr, equality, hash (or unhashability), frozenness, fields, replace() and a class's own methods kept."""

from __future__ import annotations

import copy
import dataclasses
import importlib
from dataclasses import field

import pytest

from logdoctor.core.lean import dataclass as lean


def _post_init_doubles(self):
    object.__setattr__(self, "a", self.a * 2)


def _own_init(self, x):
    self.a = x + 1


# class bodies as (annotations, namespace) builders: fresh Field objects per class (the decorators fill them in);
# classes are made with type(), not from source text (no exec in this repository: test_no_unsafe_patterns)
BODIES = {
    "plain": lambda: (
        {"a": "int", "b": "list", "c": "int"},
        {"b": field(default_factory=list, repr=False), "c": field(default=0, compare=False)},
    ),
    "default": lambda: ({"a": "int"}, {"a": 1}),
    "empty": lambda: ({}, {}),
    "own_eq": lambda: ({"a": "int"}, {"__eq__": _EQ}),
    "own_hash": lambda: ({"a": "int"}, {"__hash__": _HASH}),
    "own_repr": lambda: ({"a": "int"}, {"__repr__": _REPR}),
    "hash_field": lambda: ({"a": "int", "b": "int"}, {"b": field(default=0, hash=False)}),
}
ARGS = {"plain": (1, [2]), "default": (), "empty": (), "own_eq": (1,), "own_hash": (1,), "own_repr": (1,)}
OPTIONS = [{}, {"frozen": True}, {"slots": True}, {"frozen": True, "slots": True}]


def _EQ(self, o):  # noqa: N802 - a class body's __eq__
    return True


def _HASH(self):  # noqa: N802
    return 7


def _REPR(self):  # noqa: N802
    return "mine"


def _pair(options: dict, body):
    out = []
    for deco in (dataclasses.dataclass, lean):
        ann, ns = body()
        cls = type("C", (), {"__annotations__": dict(ann), "__module__": __name__, "__qualname__": "C", **ns})
        out.append(deco(**options)(cls) if options else deco(cls))
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
    std, ours = _pair({}, lambda: ({"a": "object"}, {"a": None}))
    s, o = std(), ours()
    s.a, o.a = s, o
    assert repr(s) == repr(o) == "C(a=...)"


def test_inheriting_a_dataclass_is_refused():
    _, ours = _pair({}, BODIES["default"])
    with pytest.raises(TypeError):
        lean(type("D", (ours,), {"__annotations__": {"b": "int"}, "b": 2}))


def INIT_BODY():  # noqa: N802 - a body like the others
    return (
        {"a": "int", "b": "list", "c": "int", "d": "dict", "e": "str"},
        {
            "b": field(default_factory=list),
            "c": 3,
            "d": field(default_factory=dict, init=False),
            "e": field(default="x", init=False),
        },
    )


CALLS = [((1,), {}), ((1, [2]), {}), ((1,), {"c": 4}), ((), {"a": 1, "c": 5, "b": [9]}), ((1, [2], 3), {})]
BAD_CALLS = [((), {}), ((1, [], 3, 4), {}), ((1,), {"a": 2}), ((1,), {"z": 1}), ((1,), {"d": {}})]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "default")
def test_init_like_dataclasses(options):
    std, ours = _pair(options, INIT_BODY)
    for args, kw in CALLS:
        s, o = std(*args, **kw), ours(*args, **kw)
        assert repr(s) == repr(o)
        assert dataclasses.asdict(s) == dataclasses.asdict(o)
        if not options.get("slots"):
            assert list(vars(s)) == list(vars(o))  # the same attributes, set in the same order
    one, two = ours(1), ours(1)
    assert one.b is not two.b and one.d is not two.d  # a factory per instance
    for args, kw in BAD_CALLS:
        with pytest.raises(TypeError):
            std(*args, **kw)
        with pytest.raises(TypeError):
            ours(*args, **kw)
    assert dataclasses.replace(ours(1), c=7).c == 7
    assert ours.__match_args__ == std.__match_args__
    p, q = std.__dataclass_params__, ours.__dataclass_params__
    assert (p.init, p.repr, p.eq, p.frozen) == (q.init, q.repr, q.eq, q.frozen)


def test_post_init_and_own_init_kept():
    std, ours = _pair({"frozen": True}, lambda: ({"a": "int"}, {"__post_init__": _post_init_doubles}))
    assert std(2) == std(4 // 2) and ours(2).a == std(2).a == 4
    _, mine = _pair({}, lambda: ({"a": "int"}, {"__init__": _own_init}))
    assert mine(1).a == 2


@lean
class _Plain:
    """Pickled by reference: module-level classes."""

    a: int
    b: tuple = ()


@lean(frozen=True)
class _Frozen:
    """Frozen."""

    a: int
    b: tuple = ()


@lean(slots=True)
class _Slots:
    """Slots."""

    a: int
    b: tuple = ()


@lean(frozen=True, slots=True)
class _FrozenSlots:
    """Frozen, slots."""

    a: int
    b: tuple = ()


@pytest.mark.parametrize("cls", [_Plain, _Frozen, _Slots, _FrozenSlots], ids=lambda c: c.__name__)
def test_copy_and_reduce(cls):
    o = cls(1, (2,))
    for again in (copy.copy(o), copy.deepcopy(o), _reduced(o)):
        assert again == o and repr(again) == repr(o)
    if cls.__dataclass_params__.frozen:
        with pytest.raises(dataclasses.FrozenInstanceError):
            del o.a
        with pytest.raises(dataclasses.FrozenInstanceError):
            o.b = ()
        assert hash(o) == hash(cls(1, (2,)))


def _reduced(o):
    """What a pickle round trip rebuilds from the object's reduce value (protocol 2), done without pickle (banned
    in this repository): the class's constructor, then the state through __setstate__ or (dict, slots)."""
    func, args, *rest = o.__reduce_ex__(2)
    new = func(*args)
    state = rest[0] if rest else None
    if state is None:
        return new
    if hasattr(new, "__setstate__") and type(new).__setstate__ is not object.__dict__.get("__setstate__"):
        new.__setstate__(state)
        return new
    d, slots = state if isinstance(state, tuple) else (state, None)
    for k, v in {**(d or {}), **(slots or {})}.items():
        object.__setattr__(new, k, v)
    return new


def test_reduces_like_a_dataclass():
    from logdoctor.verdict.diagnosis import FixStep

    one = FixStep("mem_fraction_static", "--mem-fraction-static", 0.9, 0.85, "less for the KV pool")
    assert _reduced(one) == one
    assert getattr(importlib.import_module(type(one).__module__), type(one).__qualname__) is type(one)  # by reference
    assert one != dataclasses.replace(one, to=0.8)


def test_explain_path_compiles_no_dataclass_method(tmp_path):
    """Start-up guard: a dataclass added to explain's import path uses core/lean.dataclass (the standard decorator
    compiles ~0.9M instructions of source per method). Counted through dataclasses' private `_create_fn`, which
    Python 3.11/3.12 use for every generated method (skipped where it does not exist)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not hasattr(dataclasses, "_create_fn"):
        pytest.skip("this Python's dataclasses generate methods another way")
    log = tmp_path / "a.log"
    log.write_text("INFO 05-01 10:00:00 api_server.py:1] vLLM API server version 0.8.5\n")
    probe = (
        "import dataclasses, sys\n"
        "seen = []\n"
        "orig = dataclasses._create_fn\n"
        "def spy(name, *a, **k):\n"
        "    seen.append((name, k.get('globals', {}).get('__name__')))\n"
        "    return orig(name, *a, **k)\n"
        "dataclasses._create_fn = spy\n"
        "import atexit\n"
        "atexit.register(lambda: sys.stderr.write(f'created {len(seen)} {seen}\\n'))\n"
        "from logdoctor.cli.entry import main\n"
        f"sys.argv = ['logdoctor', 'explain', '--no-history', {str(log)!r}]\n"
        "main()\n"
    )
    env = dict(os.environ, LOGDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert "created 0" in r.stderr, r.stderr[-2000:]


def _written_init_classes():
    """The lean dataclasses of the package whose class body writes its own `__init__` (the per-line hot ones)."""
    import inspect
    import pkgutil

    import logdoctor

    found = []
    for info in pkgutil.walk_packages(logdoctor.__path__, "logdoctor."):
        if info.name.startswith(("logdoctor.__main__", "logdoctor.classify.train", "logdoctor.cli")):
            continue
        mod = importlib.import_module(info.name)
        for obj in vars(mod).values():
            if (
                inspect.isclass(obj)
                and obj.__module__ == mod.__name__
                and dataclasses.is_dataclass(obj)
                and "__init__" in obj.__dict__
                and obj.__init__.__qualname__.endswith(f"{obj.__name__}.__init__")
                and obj.__init__.__code__.co_filename == inspect.getsourcefile(obj)
            ):
                found.append(obj)
    return found


def test_written_inits_match_their_fields():
    """A hand-written `__init__` (kept by the decorator, compiled into the module's bytecode) takes exactly the
    fields, in order, with their defaults; a field with a factory takes None and gets a fresh value."""
    import inspect

    classes = _written_init_classes()
    assert {c.__name__ for c in classes} >= {"Record", "Prefix", "Outer", "Peeled", "Event"}
    for cls in classes:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        fs = [f for f in dataclasses.fields(cls) if f.init]
        assert [p.name for p in params] == [f.name for f in fs], cls
        for p, f in zip(params, fs):
            if f.default_factory is not dataclasses.MISSING:
                assert p.default is None, (cls, f.name)
            elif f.default is dataclasses.MISSING:
                assert p.default is inspect.Parameter.empty, (cls, f.name)
            else:
                assert p.default == f.default, (cls, f.name)
        required = [f.name for f in fs if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        args = {name: object() for name in required}
        a, b = cls(**args), cls(**args)
        for f in dataclasses.fields(cls):  # every field set: to the argument, the default, or a fresh factory value
            va = getattr(a, f.name)
            if f.name in args:
                assert va is args[f.name]
            elif f.default_factory is not dataclasses.MISSING:
                assert va == f.default_factory() and va is not getattr(b, f.name)
            else:
                assert va == f.default
