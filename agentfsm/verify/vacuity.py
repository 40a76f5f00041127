"""Whether a pass means something: every field a guard or effect reads is really varied.

A guard that reads a field no step of the exploration changes is only ever asked one
question, so an edge it guards may be dead in practice while the report says it was
taken; one that reads a field outside the configuration (not in `Domains.abstraction`,
`Domains.initial` or `Domains.environment`) sees whatever value the first path to a
configuration left there, since configurations that differ only in it are merged.
"""

from __future__ import annotations

from agentfsm.verify.explore import Explorer
from agentfsm.verify.properties import Edge, Finding

_STATES = frozenset({"state", "loop_state"})


def _problem(explorer: Explorer, kind: str, name: str, values: set[object]) -> str | None:
    domains = explorer.domains
    if name in domains.environment:
        seen = set(map(repr, domains.environment[name]))
        if len(seen) > 1:
            return None
        return f"reads {name!r}, an environment field with a single value"
    if kind == "guard" and name not in _STATES | {*domains.abstraction, *domains.initial}:
        return (
            f"reads {name!r}, which is not part of a configuration (configurations that "
            "differ only in it are merged): add it to Domains.abstraction"
        )
    if len(values) > 1:
        return None
    (only,) = values
    return f"reads {name!r}, which is {only!r} in every step that read it"


def check_varied(explorer: Explorer) -> Finding | None:
    """The first (in breadth-first order) read of a field the exploration does not vary.

    Effects reading a field they also write (``turn += 1``) are not counted: the effect
    table checks what they make of it.
    """
    merged: dict[tuple[str, str, str, str], tuple[set[object], tuple[int, int]]] = {}
    for key, reads in explorer.reads.items():
        kind, machine, event, _, _ = key
        written = explorer.writes.get(key, set()) if kind == "effect" else set()
        for name, values in reads.items():
            if name in written:
                continue
            at = explorer.first_read[key, name]
            seen, first = merged.setdefault((kind, machine, event, name), (set(), at))
            seen.update(values)
            merged[kind, machine, event, name] = (seen, min(first, at))
    found: list[tuple[tuple[int, int], str]] = []
    for (kind, machine, event, name), (values, at) in merged.items():
        problem = _problem(explorer, kind, name, values)
        if problem is not None:
            what = "a guard" if kind == "guard" else "an effect"
            found.append((at, f"{what} of {machine} {event!r} {problem}"))
    if not found:
        return None
    (node, move), message = min(found)
    outcome = next((explorer.nodes[t] for t, m in explorer.out[node] if m == move), None)
    field = "state" if explorer.moves[move].machine.value == "run" else "loop_state"
    edge: Edge = (node, move, None if outcome is None else getattr(outcome.data, field))
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return Finding("varied", node, message + more, (edge,))
