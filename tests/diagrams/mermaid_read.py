"""Reads grouped Mermaid back into transitions, knowing only the notation.

A transition from a composite state stands for one from each state inside it (a run
group holding ``busy`` holds ``busy``, not TurnLoop's states); one into ``<group>_H`` for
one to each state of the group, guarded ``paused_in_<state>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Transition = tuple[str, str, str, str, str | None, bool]


@dataclass
class _Read:
    members: dict[str, set[str]] = field(default_factory=dict)
    machine_of: dict[str, str] = field(default_factory=dict)
    arrows: list[str] = field(default_factory=list)
    state_machine: dict[str, str] = field(default_factory=dict)


def _read(text: str, view: str) -> _Read:
    read, stack = _Read(), []
    for raw in text.splitlines()[1:]:
        line = raw.strip()
        machine = "loop" if view == "loop" or "busy" in stack else "run"
        if opened := re.fullmatch(r"state (\w+) \{", line):
            stack.append(opened[1])
            read.members[opened[1]] = set()
            read.machine_of[opened[1]] = read.state_machine[opened[1]] = machine
            if opened[1] == "busy":
                for group in stack[:-1]:
                    read.members[group].add("busy")
        elif line == "}":
            stack.pop()
        elif " --> " in line:
            read.arrows.append(line)
        elif re.fullmatch(r"\w+", line):
            read.state_machine[line] = machine
            for group in stack:
                if read.machine_of[group] == machine:
                    read.members[group].add(line)
    return read


def transitions(text: str, view: str) -> set[Transition]:
    """Every transition a grouped Mermaid text shows, each from a composite expanded."""
    read, found = _read(text, view), set()
    for line in read.arrows:
        ends, _, label = line.partition(": ")
        source, target = ends.split(" --> ")
        if "[*]" in (source, target):
            continue
        machine = read.state_machine[source]  # where its source was declared
        event, _, guard = label.partition(" [")
        grouped = source in read.members and source != "busy"
        sources = read.members[source] if grouped else {source}
        if target.endswith("_H"):
            found |= {
                (machine, event, s, t, f"paused_in_{t}", False)
                for s in sources
                for t in read.members[target[:-2]]
            }
        else:
            internal = label.endswith("(internal)")
            guarded = guard.split("]")[0] or None
            found |= {(machine, event, s, target, guarded, internal) for s in sources}
    return found
