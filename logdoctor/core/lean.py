"""`dataclass` for the classes on explain's start-up path: the standard decorator with the same semantics, cheaper
to apply (issue 20: creating ~58 dataclasses was about a quarter of a 140-line explain).

`dataclasses.dataclass` compiles every method it adds from generated source (one `exec` each, ~0.9M instructions:
the parser and compiler run per method): `__init__`, `__repr__`, `__eq__`, and for a frozen class `__hash__`,
`__setattr__` and `__delattr__`. Here the standard decorator is applied with none of them (it still collects the
fields, defaults and factories, checks them, makes the slots class, `__match_args__` and `__dataclass_fields__`), and
the methods are shared functions bound to the class's fields, written once in this module, following the rules the
standard decorator follows:

- `__init__(self, <fields with init=True, in order>)`: positional or by keyword, defaults and `default_factory`
  (called per instance, also for `init=False` fields), then `__post_init__()` when the class has one; a frozen class
  sets its fields through `object.__setattr__`; a missing, unexpected or repeated argument is a TypeError;
- `__repr__`: `QualName(a=..., b=...)` over the fields with `repr=True`, '...' on recursion;
- `__eq__`: the field tuples (fields with `compare=True`) of two objects of the very same class, else
  NotImplemented;
- `__hash__`: frozen → the hash of the tuple of hashed fields (`hash=None` follows `compare`); not frozen → None
  (unhashable);
- frozen: `__setattr__`/`__delattr__` raise `dataclasses.FrozenInstanceError`; with slots, `__getstate__` and
  `__setstate__` (pickle, copy) as the standard decorator adds them.

A method the class body writes itself (`__init__`, `__repr__`, `__eq__`, `__hash__`) is kept, as the standard
decorator keeps it. `fields()`, `replace()`, `asdict()` and `is_dataclass()` work as on any dataclass;
`__dataclass_params__` tells the truth (init, repr, eq, frozen). Not offered (TypeError, or use
`dataclasses.dataclass`): order, unsafe_hash, kw_only, InitVar, and inheriting from another dataclass.

Nor does it import `dataclasses` (which imports `inspect`, and with it `ast`, `dis` and `tokenize`: ~5 ms of every
start): the fields are collected here, with this module's `field()` (a `dataclasses.field()` is read the same way),
and `__dataclass_fields__` / `__dataclass_params__` are built from `dataclasses` the first time something asks for
them (`fields()`, `asdict()`, `is_dataclass()`, the standard `replace()`). `replace()` here needs neither.
"""

from __future__ import annotations

import sys
from _thread import get_ident
from collections import deque
from collections.abc import Callable
from itertools import repeat
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no default (dataclasses.MISSING plays this part once `__dataclass_fields__` is built)


class Field:
    """A field's specification, as `dataclasses.Field` holds it (name and type filled in by the decorator)."""

    __slots__ = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare", "metadata")

    def __init__(self, default, default_factory, init, repr, hash, compare, metadata):  # noqa: A002 - its names
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name: str = ""
        self.type: Any = None
        self.default, self.default_factory = default, default_factory
        self.init, self.repr, self.hash, self.compare, self.metadata = init, repr, hash, compare, metadata

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,  # noqa: A002 - dataclasses.field's names
    hash: bool | None = None,  # noqa: A002
    compare: bool = True,
    metadata: Any = None,
) -> Any:
    """dataclasses.field, for this module's decorator."""
    return Field(default, default_factory, init, repr, hash, compare, metadata)


def _spec(value: Any) -> Field | None:
    """A class-body value as a field spec: this module's Field, a `dataclasses.Field` read the same way, else None
    (a plain default)."""
    if value.__class__ is Field:
        return value
    if type(value).__name__ == "Field" and type(value).__module__ == "dataclasses":
        missing = sys.modules["dataclasses"].MISSING
        return Field(
            MISSING if value.default is missing else value.default,
            MISSING if value.default_factory is missing else value.default_factory,
            value.init,
            value.repr,
            value.hash,
            value.compare,
            value.metadata,
        )
    return None


# "ClassVar[...]" as an annotation string (every module here has `from __future__ import annotations`)
_CLASSVAR = ("ClassVar", "typing.ClassVar", "t.ClassVar")


def _collect(cls: type) -> tuple[Field, ...]:
    """The class's fields in annotation order, with the standard decorator's checks; the class attribute of a field
    is its plain default (a spec without one is removed), as the standard decorator leaves it."""
    notes = cls.__dict__.get("__annotations__", {})
    out = []
    seen_default = False
    for name, ann in notes.items():
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
        if text.startswith(_CLASSVAR):
            continue
        if "InitVar" in text or "KW_ONLY" in text:
            raise TypeError(f"{cls.__name__}: InitVar and KW_ONLY are not offered here; use dataclasses.dataclass")
        value = cls.__dict__.get(name, MISSING)
        spec = _spec(value) if value is not MISSING else None
        f = spec if spec is not None else Field(value, MISSING, True, True, None, True, None)
        f.name, f.type = name, ann
        if f.default is not MISSING and f.default.__class__.__hash__ is None:  # a list, dict or set shared by all
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        if f.init:
            if f.default is MISSING and f.default_factory is MISSING:
                if seen_default:
                    raise TypeError(f"non-default argument {name!r} follows default argument")
            else:
                seen_default = True
        if spec is not None:  # the spec object leaves the class; its plain default stays, as dataclasses leaves it
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out.append(f)
    for name, value in cls.__dict__.items():
        if name not in notes and _spec(value) is not None:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return tuple(out)


def _slotted(cls: type, fs: tuple[Field, ...]) -> type:
    """The class again with `__slots__` for its fields (as the standard decorator's slots=True makes it)."""
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    body = dict(cls.__dict__)
    names = tuple(f.name for f in fs)
    for name in names:
        body.pop(name, None)  # a default lives in the __init__'s template, not in a class attribute
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = names
    qual = getattr(cls, "__qualname__", None)
    new = type(cls)(cls.__name__, cls.__bases__, body)
    if qual is not None:
        new.__qualname__ = qual
    return new


class _StdFields:
    """`__dataclass_fields__`, built from `dataclasses` the first time it is read (then a plain class attribute)."""

    def __get__(self, obj: Any, owner: type) -> dict:
        import dataclasses

        out = {}
        for f in owner.__lean_fields__:  # type: ignore[attr-defined]
            std: Any = dataclasses.field(
                default=dataclasses.MISSING if f.default is MISSING else f.default,
                default_factory=dataclasses.MISSING if f.default_factory is MISSING else f.default_factory,
                init=f.init,
                repr=f.repr,
                hash=f.hash,
                compare=f.compare,
                metadata=f.metadata,
            )
            std.name, std.type = f.name, f.type
            std._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            std.kw_only = False
            out[f.name] = std
        type.__setattr__(owner, "__dataclass_fields__", out)
        return out


class _StdParams:
    """`__dataclass_params__`, built on first read: init, repr and eq true, frozen and slots as asked."""

    def __get__(self, obj: Any, owner: type) -> Any:
        import dataclasses

        frozen, slots = owner.__lean_options__  # type: ignore[attr-defined]
        cls = dataclasses._DataclassParams  # type: ignore[attr-defined]
        n = cls.__init__.__code__.co_argcount - 1  # 6 on 3.11, more later: (…, match_args, kw_only, slots, weakref)
        params = cls(*(True, True, True, False, False, frozen, True, False, slots, False)[:n])
        type.__setattr__(owner, "__dataclass_params__", params)
        return params


def replace(obj: _T, /, **changes: Any) -> _T:
    """dataclasses.replace for this module's classes (any other dataclass goes to the standard one)."""
    fs = getattr(type(obj), "__lean_fields__", None)
    if fs is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    for f in fs:
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


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


def _init(cls: type, fs: tuple[Field, ...], frozen: bool, slots: bool) -> Callable[..., None]:
    """The `__init__` the standard decorator would generate for these fields, without compiling one per class.

    Per call it does C-level work only, whatever the field count (it runs once per log line on triage's path: a
    loop over the fields was ~10x a generated `__init__`): the values are a copy of a template dict (the plain
    defaults, in field order) updated from the positional and keyword arguments, checked by set operations, and
    set in one `__dict__.update` (or, with slots, one `map` of the setter over the items)."""
    missing = MISSING
    params = tuple(f for f in fs if f.init)
    names = tuple(f.name for f in params)
    n = len(names)
    known = frozenset(names)
    # the required parameters come first (the standard decorator refuses a default before a non-default)
    required = sum(1 for f in params if f.default is missing and f.default_factory is missing)
    # every field the __init__ sets, in field order, with its plain default (None until an argument or a factory
    # gives it): the parameters, the fields with a factory, and (slots: no class attribute to fall back on) the
    # fields outside the parameters with a default
    template = {
        f.name: None if f.default is missing else f.default
        for f in fs
        if f.init or f.default_factory is not missing or (slots and f.default is not missing)
    }
    # (position among the parameters, or n for a field outside them; name; factory)
    factories = tuple(
        (names.index(f.name) if f.init else n, f.name, f.default_factory)
        for f in fs
        if f.default_factory is not missing
    )
    put = object.__setattr__ if frozen else setattr
    # a field that is a data descriptor of the class (a property of the same name, say) must be set through it
    # (and a class with its own __setattr__ gets it called, as a generated `self.name = value` would)
    direct = (
        not slots
        and (frozen or cls.__setattr__ is object.__setattr__)
        and not any(hasattr(type(getattr(cls, name, None)), "__set__") for name in template)
    )
    post = hasattr(cls, "__post_init__")
    qual = cls.__qualname__
    repeat_, deque_, map_ = repeat, deque, map

    def _refuse(na: int, kw: dict) -> None:
        if na > n:
            raise TypeError(f"{qual}.__init__() takes {n + 1} positional arguments but {na + 1} were given")
        for name in kw:
            if name not in known:
                raise TypeError(f"{qual}.__init__() got an unexpected keyword argument {name!r}")
        for name in names[:na]:
            if name in kw:
                raise TypeError(f"{qual}.__init__() got multiple values for argument {name!r}")
        for name in names[na:required]:
            if name not in kw:
                raise TypeError(f"{qual}.__init__() missing 1 required positional argument: {name!r}")

    def __init__(self, *args, **kw):
        na = len(args)
        if na > n or (kw and not (known.issuperset(kw) and kw.keys().isdisjoint(names[:na]))):
            _refuse(na, kw)
        values = template.copy()
        if na:
            values.update(zip(names, args))
        if kw:
            values.update(kw)
        if na < required and not kw.keys() >= set(names[na:required]):
            _refuse(na, kw)
        for i, name, factory in factories:
            if i >= na and name not in kw:
                values[name] = factory()
        if direct:
            self.__dict__.update(values)
        else:
            deque_(map_(put, repeat_(self), values, values.values()), 0)
        if post:
            self.__post_init__()

    return __init__


def _frozen_error(text: str) -> Exception:
    import dataclasses  # only when a frozen field is assigned: the standard decorator's error class

    return dataclasses.FrozenInstanceError(text)


def _frozen(cls: type, fs: tuple[Field, ...], slots: bool) -> None:
    names = frozenset(f.name for f in fs)

    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for fn in (__setattr__, __delattr__):
        if fn.__name__ in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {fn.__name__} in class {cls.__name__}")
        _install(cls, fn.__name__, fn)
    if slots:  # pickle and copy set slots through setattr: as dataclasses does, a state list set past the guard
        order = tuple(f.name for f in fs)
        getter = _getter(order)

        def __getstate__(self):
            return list(getter(self))

        def __setstate__(self, state):
            for name, value in zip(order, state):
                object.__setattr__(self, name, value)

        _install(cls, "__getstate__", __getstate__)
        _install(cls, "__setstate__", __setstate__)


def _add_methods(cls: type, fs: tuple[Field, ...], frozen: bool, slots: bool) -> type:
    own_eq = "__eq__" in cls.__dict__
    class_hash = cls.__dict__.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and own_eq))
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

    _install(cls, "__init__", _init(cls, fs, frozen, slots))
    _install(cls, "__repr__", __repr__)
    _install(cls, "__eq__", __eq__)
    if not explicit_hash:  # eq=True: frozen → the fields' hash, mutable → unhashable (the standard decorator's table)
        __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
        cls.__hash__ = __hash__ if frozen else None  # type: ignore[method-assign,assignment]
    if frozen:
        _frozen(cls, fs, slots)
    return cls


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(*, frozen: bool = False, slots: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field, Field))
def dataclass(cls=None, /, *, frozen=False, slots=False):
    """`@dataclass` / `@dataclass(frozen=True, slots=True)`: see the module's docstring."""

    def wrap(c):
        if any("__dataclass_fields__" in b.__dict__ or "__lean_fields__" in b.__dict__ for b in c.__mro__[1:]):
            raise TypeError(f"{c.__name__}: a lean dataclass does not inherit from a dataclass")
        fs = _collect(c)
        if slots:
            c = _slotted(c, fs)
        c.__lean_fields__ = fs
        c.__lean_options__ = (frozen, slots)
        c.__dataclass_fields__ = _StdFields()
        c.__dataclass_params__ = _StdParams()
        if "__match_args__" not in c.__dict__:
            c.__match_args__ = tuple(f.name for f in fs if f.init)  # type: ignore[misc]
        return _add_methods(c, fs, frozen, slots)

    return wrap if cls is None else wrap(cls)
