"""The checks made on one step: two-way conformance, the effects' postconditions and I5.

`expected` reads the postconditions of `agentfsm.states.effects` for one transition and
says what every field named there must be afterwards; `effect_mismatch` compares the data
after the step with them, every other field with its value before (the frame condition).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from agentfsm.fsm.compiled import CompiledTransition
from agentfsm.states.effects import Expect, ExpectKind, Postcondition
from agentfsm.verify.domains import Arguments


def normal(value: object) -> object:
    """A value as compared: lists and tuples alike (recursively), numbers as floats."""
    if isinstance(value, list | tuple):
        return tuple(normal(item) for item in value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


def _evaluate(expect: Expect, old: object, source: str, args: Arguments) -> object:
    kind = expect.kind
    if kind is ExpectKind.VALUE:
        return normal(expect.value)
    if kind is ExpectKind.INCREMENT:
        return normal(old) + normal(expect.value)  # type: ignore[operator]  # numbers
    if kind is ExpectKind.SOURCE:
        return source
    if kind is ExpectKind.TAIL:
        return normal(old)[1:]  # type: ignore[index]  # a tuple field
    given = args.get(expect.argument or "")
    if kind is ExpectKind.APPEND_ARGUMENT:
        return (*normal(old), normal(given))  # type: ignore[misc]  # a tuple field
    return normal(given)


def _applies(
    post: Postcondition, event: str, source: str, target: str, before: object, args: Arguments
) -> bool:
    if post.event != event or source not in post.sources:
        return False
    if post.target is not None and post.target != target:
        return False
    if any(normal(getattr(before, f, None)) != normal(v) for f, v in post.when.items()):
        return False
    return all(normal(args.get(a)) == normal(v) for a, v in post.when_arguments.items())


def expected(
    effects: Iterable[Postcondition],
    event: str,
    source: str,
    target: str,
    before: object,
    args: Arguments,
) -> dict[str, object]:
    """Field → its value after ``event`` takes ``source`` → ``target`` from ``before``.

    Only the fields some applicable postcondition names; every other keeps its value.
    """
    found: dict[str, object] = {}
    for post in effects:
        if _applies(post, event, source, target, before, args):
            for name, expect in post.sets.items():
                found[name] = _evaluate(expect, getattr(before, name, None), source, args)
    return found


def effect_mismatch(
    fields: Iterable[str],
    before: object,
    after: object,
    wanted: Mapping[str, object],
) -> str | None:
    """What differs from the postcondition (``wanted``, else the value before), or None."""
    wrong = []
    for name in fields:
        got = getattr(after, name)
        if name in wanted:
            want = wanted[name]
        else:
            old = getattr(before, name)
            if got is old or got == old:
                continue  # the frame condition, at its cheapest
            want = normal(old)
        if normal(got) != want:
            how = "the effect table says" if name in wanted else "it must keep"
            wrong.append(f"{name}={got!r} ({how} {want!r})")
    return "; ".join(wrong) or None


def nonconformance(
    event: str,
    source: str,
    took: str | None,
    spec: tuple[str, str | None] | None,
    *,
    governed: bool,
    known: bool = True,
) -> str | None:
    """Why a step breaks two-way conformance, or None when it conforms.

    Args:
        event: The event sent.
        source: The state it was sent in.
        took: The target the machine took, or None when it refused the event.
        spec: The spec's first row for it whose guard holds: (target, guard name), or None.
        governed: Whether the spec has rows of ``event`` from ``source`` at all.
        known: Whether the spec has rows of ``event`` anywhere (an event it does not know
            may still not go from one of its states to another: the contract is closed).
    """
    if not governed:
        if took is None:
            return None
        if not known:
            return (
                f"{event!r} took {source!r} → {took!r}, but the spec table has no event "
                f"{event!r}: between its states only its own rows may be taken (the contract "
                "is closed)"
            )
        return f"{event!r} took {source!r} → {took!r}, but the spec table has no row of it there"
    wanted = spec[0] if spec is not None else None
    if took == wanted:
        return None
    if spec is not None and took is None:
        guard = f" [{spec[1]}]" if spec[1] else ""
        return (
            f"the spec's row {event!r} {source!r} → {wanted!r}{guard} holds here, but the "
            "machine refused the event"
        )
    if wanted is None:
        return f"{event!r} took {source!r} → {took!r}, but no row of the spec for it holds here"
    return (
        f"{event!r} took {source!r} → {took!r}, but the spec's first row that holds here "
        f"goes to {wanted!r}"
    )


def turn_miscount(event: str, before: int, after: int, starts: bool) -> str | None:
    """I5: why a step's change of ``turn`` is wrong, or None (+1 when it ``starts`` a turn)."""
    if after == before + (1 if starts else 0):
        return None
    what = "a submit that starts a turn" if starts else repr(event)
    return f"{what} took turn from {before} to {after}"


def overlap(event: str, enabled: Sequence[CompiledTransition]) -> str:
    """Why a step breaks determinism: which transitions are enabled at once."""
    targets = ", ".join(repr(t.target) for t in enabled)
    guards = "; ".join(" and ".join(t.guard_names) or "no guard" for t in enabled)
    return f"{len(enabled)} transitions of {event!r} are enabled at once, to {targets} " + (
        f"(guards: {guards})"
    )


def changes(fields: Sequence[str], before: Sequence[object], after: object) -> str:
    """What a refused event changed (I4): each field's value before and after."""
    changed = [
        f"{name}: {old!r} → {getattr(after, name)!r}"
        for name, old in zip(fields, before, strict=True)
        if getattr(after, name) != old
    ]
    return "changed " + ("; ".join(changed) or "the event log")
