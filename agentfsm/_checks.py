"""Argument checks shared by the public constructors and methods: refuse bad input at the door.

Each check raises `TypeError` (a value of the wrong kind) or `ValueError` (the right kind, a
value out of range) with a message naming the argument, what was given and what is allowed,
before anything is changed. ``bool`` is never accepted where a number is expected.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Collection, Iterable
from typing import NoReturn


def given(value: object) -> str:
    """What was given, for an error message: its repr, cut short, and its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def refuse_type(name: str, value: object, allowed: str) -> NoReturn:
    """Raise the `TypeError` of argument ``name``, which must be ``allowed``."""
    raise TypeError(f"{name} must be {allowed}, not {given(value)}")


def is_number(value: object) -> bool:
    """Whether ``value`` is an int or float (a bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_whole(value: object) -> bool:
    """Whether ``value`` is an int (a bool is not one here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_time(value: object) -> bool:
    """Whether ``value`` is a finite number: a time, in seconds since the epoch."""
    return is_number(value) and math.isfinite(value)  # type: ignore[arg-type]  # a number


def seconds(name: str, value: object, *, optional: bool = False, zero: bool = False) -> None:
    """Check a duration: a finite number of seconds > 0 (>= 0 with ``zero``), or None.

    Raises:
        TypeError: Not a number (a string such as ``"5s"`` included).
        ValueError: Negative, zero (unless allowed), infinite or NaN.
    """
    if value is None and optional:
        return
    bound = ">= 0" if zero else "> 0"
    allowed = f"a number of seconds {bound}" + (" or None" if optional else "")
    if not is_number(value):
        refuse_type(name, value, allowed)
    number = float(value)  # type: ignore[arg-type]  # is_number checked it
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise ValueError(f"{name} must be {allowed}, not {given(value)}")


def whole(name: str, value: object, *, minimum: int, optional: bool = False) -> None:
    """Check a whole number >= ``minimum`` (or None when ``optional``).

    Raises:
        TypeError: Not an int (a bool, a float or a string included).
        ValueError: Below ``minimum``.
    """
    if value is None and optional:
        return
    allowed = f"a whole number >= {minimum}" + (" or None" if optional else "")
    if not isinstance(value, int) or isinstance(value, bool):
        refuse_type(name, value, allowed)
    if value < minimum:
        raise ValueError(f"{name} must be {allowed}, not {given(value)}")


def text(name: str, value: object, *, empty: bool = False, optional: bool = False) -> None:
    """Check a string (non-empty unless ``empty``), or None when ``optional``.

    Raises:
        TypeError: Not a str.
        ValueError: Empty or only whitespace when that is not allowed.
    """
    if value is None and optional:
        return
    kind = "a string" if empty else "a non-empty string"
    allowed = kind + (" or None" if optional else "")
    if not isinstance(value, str):
        refuse_type(name, value, allowed)
    if not empty and not value.strip():
        raise ValueError(f"{name} must be {allowed}, not {given(value)}")


def flag(name: str, value: object) -> None:
    """Check a bool (``0``, ``1`` and ``"yes"`` are refused: they hide mistakes).

    Raises:
        TypeError: Not a bool.
    """
    if not isinstance(value, bool):
        refuse_type(name, value, "True or False")


def choice(name: str, value: object, allowed: Collection[str]) -> None:
    """Check one of a fixed set of strings.

    Raises:
        ValueError: Not one of ``allowed``.
    """
    if not isinstance(value, str) or value not in allowed:
        listed = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {listed}, not {given(value)}")


def names(name: str, value: object, *, optional: bool = False) -> tuple[str, ...] | None:
    """Check a collection of names (a set, list or tuple of str), returning them in order.

    A single string is refused: it would be read letter by letter.

    Raises:
        TypeError: A string, a non-iterable, or an item that is not a str.
    """
    if value is None and optional:
        return None
    allowed = "a collection of names (a set, list or tuple of str)" + (
        " or None" if optional else ""
    )
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        refuse_type(name, value, allowed)
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{name} must be {allowed}; it holds {given(item)}")
    return items


def callable_or_none(name: str, value: object) -> None:
    """Check a callable, or None.

    Raises:
        TypeError: Neither.
    """
    if value is not None and not callable(value):
        refuse_type(name, value, "a callable or None")


def seconds_option(text: str) -> float:
    """A command-line option's seconds: a number >= 0 (an ``argparse`` ``type=``).

    Raises:
        argparse.ArgumentTypeError: Anything else, quoted.
    """
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value
