"""`dataclass` for the classes on explain's start-up path: the standard decorator with the same semantics, cheaper
to apply (issue 20: creating ~58 dataclasses was about a quarter of a 140-line explain).

`dataclasses.dataclass` compiles every method it adds from generated source (`exec`, one per method): `__init__`,
`__repr__`, `__eq__`, and for a frozen class `__hash__`, `__setattr__` and `__delattr__`. Only `__init__` (and a
frozen class's guards) need to be compiled per class; `__repr__`, `__eq__` and `__hash__` here are shared functions
bound to the class's field names through `operator.attrgetter`, installed with the rules the standard decorator
follows:

- `__repr__`: `QualName(a=..., b=...)` over the fields with `repr=True`, '...' on recursion;
- `__eq__`: the field tuples (fields with `compare=True`) of two objects of the very same class, else
  NotImplemented;
- `__hash__`: frozen → the hash of the tuple of hashed fields (`hash=None` follows `compare`); not frozen → None
  (unhashable); a class that writes its own `__hash__` (or `__eq__`, `__repr__`) keeps it.

Everything else is `dataclasses.dataclass` itself (`fields()`, `replace()`, `asdict()`, `is_dataclass()`, slots,
frozen, defaults and factories), so the class is a dataclass in every respect a caller can see, except that its
`__dataclass_params__` says repr=False and eq=False (the methods are there all the same). Options beyond `frozen`
and `slots` (order, unsafe_hash, ...) are not offered: use `dataclasses.dataclass` for those.
"""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """A function of an object → the tuple of its `names` attributes (a 1-tuple for one name, () for none)."""
    if len(names) > 1:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _install(cls: type, name: str, fn: Any) -> None:
    """Set a method unless the class body wrote its own (as the standard decorator does)."""
    if name not in cls.__dict__:
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, fn)


def _add_methods(cls: type, frozen: bool) -> type:
    own_eq = "__eq__" in cls.__dict__
    class_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (class_hash is dataclasses.MISSING or (class_hash is None and own_eq))
    fs = dataclasses.fields(cls)  # type: ignore[arg-type]
    shown = tuple(f.name for f in fs if f.repr)
    shown_of = _getter(shown)
    compared_of = _getter(tuple(f.name for f in fs if f.compare))
    hashed_of = _getter(tuple(f.name for f in fs if (f.compare if f.hash is None else f.hash)))
    running: set = set()

    def __repr__(self):
        key = (id(self), get_ident())
        if key in running:
            return "..."
        running.add(key)
        try:
            parts = ", ".join([f"{n}={v!r}" for n, v in zip(shown, shown_of(self))])
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({parts})"

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return compared_of(self) == compared_of(other)
        return NotImplemented

    def __hash__(self):
        return hash(hashed_of(self))

    _install(cls, "__repr__", __repr__)
    _install(cls, "__eq__", __eq__)
    if not explicit_hash:  # eq=True: frozen → the fields' hash, mutable → unhashable (the standard decorator's table)
        __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
        cls.__hash__ = __hash__ if frozen else None  # type: ignore[method-assign,assignment]
    return cls


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(*, frozen: bool = False, slots: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls=None, /, *, frozen=False, slots=False):
    """`@dataclass` / `@dataclass(frozen=True, slots=True)`: see the module's docstring."""

    def wrap(c):
        c = dataclasses.dataclass(c, repr=False, eq=False, frozen=frozen, slots=slots)
        return _add_methods(c, frozen)

    return wrap if cls is None else wrap(cls)
