"""Pydantic models built without validation, for the hot path's internal records only.

A run builds a few records per tool call (its result, its tool message, its trace entry)
from values that are valid by construction: ids from a validated `ToolCall`, text the code
just made, durations it just measured. pydantic's validated constructor costs 2 to 3 µs per
record, and even its unvalidated ``model_construct`` about 2.5 µs (it walks the fields for
defaults). Two ways here, each field set in the class's field order, then `sealed` sets the
three slots pydantic sets on a validated instance:

- `blank`, then each field stored in the instance's ``__dict__``: the fastest (a dict store
  per field), but the ``__dict__`` is a dict object of its own (64 bytes per record).
- `new`, then each field `put` into the instance's inline values: no dict object, 64 bytes
  less per record than pydantic's own instances, but each `put` is a call of
  ``object.__setattr__`` (in CPython 3.11 about 400 instructions more than a dict store).
  Used for the messages, whose dicts a run would hold the most of for the fewest fields;
  their class is decorated with `inline_fields`, or the inline values are silently lost.

A third way, for a record that lives briefly (an `Event`: built, told, freed): an instance of
the class's `twin`, every field and slot set with plain attribute stores, then made an
instance of the class by assigning ``__class__``. The cheapest of all (about 4,200
instructions per event built and freed, against 7,600 through a `blank` and the slot
setters), but the class change gives the record a ``__dict__`` object, as `blank` does.

Each caller sets every field, and the set of fields a validated construction would have
marked as given; property tests (tests/states/test_unchecked.py and the tests of each
caller) pin each result equal to the validated one, field set and JSON included, so a
pydantic change that broke this would fail the suite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def _slot_setter(name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = BaseModel.__dict__[name].__set__
    return setter


_new = object.__new__
_set = object.__setattr__

new: Callable[[type[BaseModel]], Any] = _new
"""An instance of a model class with nothing set yet (``object.__new__``): `put` each field
into it, in the class's field order, then `sealed` it."""
put: Callable[[object, str, object], None] = _set
"""Set one field of an instance from `new` in its inline values (``object.__setattr__``).

Callers write one `put` per field, straight-line (no dict of values, no loop): no
``__dict__`` object is made (64 bytes per record), at the cost of a call per field.
"""
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")

put_fields_set: Callable[[object, object], None] = _set_fields_set
"""``put_fields_set(record, fields)`` is ``put(record, "__pydantic_fields_set__", fields)``:
the slot's own setter, a third cheaper than ``object.__setattr__``'s lookup by name. With
`put_extra` and `put_private`, `sealed` inlined where one call less counts."""
put_extra: Callable[[object, object], None] = _set_extra
"""``put_extra(record, None)`` is ``put(record, "__pydantic_extra__", None)``."""
put_private: Callable[[object, object], None] = _set_private
"""``put_private(record, None)`` is ``put(record, "__pydantic_private__", None)``."""


def inline_fields(cls: type[M]) -> type[M]:
    """Decorate a model class whose records `put` builds, so they keep their fields inline.

    CPython 3.11 keeps an instance's attributes inline (without a ``__dict__`` object) only
    for names its class's shared key table holds, and that table takes new names only while
    few instances exist: each new instance shrinks what it may still take, whoever builds it.
    This puts every field name in it at once, by building one throwaway record, so that
    records built with `put` stay inline even once the application has built many validated
    instances (which never add names: pydantic gives them a ``__dict__`` of their own).

    Returns:
        ``cls`` itself.
    """
    record = _new(cls)
    for name in cls.model_fields:
        _set(record, name, None)
    return cls


def blank(cls: type[M]) -> M:
    """An empty instance of ``cls``: set every field in its ``__dict__``, then `sealed` it.

    Fields must be set in the order the class declares them (see the module), each a value
    its validation would have kept as it is (see the module for `new` and `put` instead).
    """
    return _new(cls)


def sealed(record: M, fields_set: set[str]) -> M:
    """``record`` (from `blank` or `new`, its fields set) with the slots pydantic sets.

    Args:
        record: The instance, every field set.
        fields_set: The fields a validated construction would have marked as given. It may
            be shared by every instance of a call site: pydantic reads it, and copies it
            before any change; it must be a set, not a frozenset.
    """
    _set_fields_set(record, fields_set)
    _set_extra(record, None)
    _set_private(record, None)
    return record


def twin(cls: type[BaseModel]) -> type[Any]:
    """A class with ``cls``'s memory layout whose instances take plain attribute stores.

    For a record that lives only briefly (an `agentfsm.states.events.Event`: built, told,
    freed), the fastest construction of all: make a blank instance of the twin by calling it
    (``record = Twin()``: nothing validated), store each field as an attribute
    (``record.seq = seq``, in the class's field order) and the three slots pydantic sets
    (``__pydantic_fields_set__``, ``__pydantic_extra__``, ``__pydantic_private__``), then
    make it a ``cls`` by storing ``record.__class__ = cls``. Each store is a plain one (the
    twin has no ``__setattr__`` of its own), a fraction of a `put` or of a slot setter's
    call; the class change is allowed because the two classes lay their instances out
    alike, which is checked here once.

    The class change gives the record a ``__dict__`` object (sharing its keys with the
    twin's other instances): 64 bytes more than `new` and `put` leave. A record a run keeps
    is better built with those.

    Raises:
        TypeError: ``cls`` adds slots of its own, so no twin can share its layout.
    """
    slots = ("__weakref__",) if cls.__weakrefoffset__ and not BaseModel.__weakrefoffset__ else ()
    meta: Any = type(cls)
    raw: type[Any] = meta(f"{cls.__name__}Twin", (BaseModel,), {"__slots__": slots})
    raw.__module__ = __name__
    # Plain stores: object's own attribute access (both, or the type keeps a slow wrapper).
    type.__setattr__(raw, "__setattr__", object.__setattr__)
    type.__setattr__(raw, "__delattr__", object.__delattr__)
    # ``raw()`` makes a blank instance: ``object.__init__``, not the model's validating one
    # (a call of the class costs about 400 instructions less than ``object.__new__(raw)``,
    # a method whose wrapper checks its argument's type on every call).
    type.__setattr__(raw, "__init__", object.__init__)
    # Every field name in the twin's shared key table, in field order (see `inline_fields`),
    # and the layout checked: a class change CPython refuses raises TypeError here, once.
    probe = _new(raw)
    for name in cls.model_fields:
        setattr(probe, name, None)
    probe.__class__ = cls
    return raw
