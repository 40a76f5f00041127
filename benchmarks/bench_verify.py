"""Seconds for ``agentfsm verify``: the shipped machines, and one wrong machine.

What users run in their own CI. Three cases, each the best of ``--repeats`` runs in this
process (the machines are compiled once, on the first run, as in one ``agentfsm verify``
process: the best run is the exploration alone), wall and CPU time:

- the shipped RunLifecycle and TurnLoop, ``verify(strict=True)`` at the default bound (3),
  as ``agentfsm verify --strict`` does;
- one wrong machine (the shortcut ``skip`` from ``busy`` straight to ``completed``,
  `tests.verify.mutants.busy_skips_to_completed`), explored fully, as ``agentfsm verify
  --run`` does without ``--fail-fast``;
- the same with ``fail_fast=True`` (``--fail-fast``).

The minimum is reported because the machines these run on are shared: a slower run is
another process's doing, never a faster verifier's. Run:
``.venv/bin/python benchmarks/bench_verify.py [--repeats N] [--quick] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm.fsm import RUN_MACHINE
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.verify import VerificationReport, verify
from tests.verify.rebuild import Edge, adding, rebuild

REPEATS = 5

SHIPPED = "shipped machines, strict, bound 3"
"""The case the target of `targets.VERIFY_SECONDS` is about."""

SHORTCUT = rebuild(RUN_MACHINE, "ShortcutRun", edit=adding(Edge("skip", "busy", "completed")))
"""The wrong machine: a run whose ``skip`` leaves ``busy`` for ``completed`` at once."""

CASES: dict[str, Callable[[], VerificationReport]] = {
    SHIPPED: lambda: verify(strict=True),
    "one wrong machine, full exploration": lambda: verify(SHORTCUT, TurnLoop),
    "one wrong machine, fail_fast": lambda: verify(SHORTCUT, TurnLoop, fail_fast=True),
}


def measure(repeats: int) -> dict[str, dict[str, Any]]:
    """Each case's best wall and CPU seconds, with its configurations and verdict."""
    found: dict[str, dict[str, Any]] = {}
    for name, case in CASES.items():
        walls, cpus = [], []
        report = None
        for _ in range(repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            report = case()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        assert report is not None
        found[name] = {
            "wall_s": min(walls),
            "cpu_s": min(cpus),
            "walls_s": walls,
            "configurations": report.configurations,
            "ok": report.ok,
        }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--quick", action="store_true", help="one run of each case")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    options = parser.parse_args()
    repeats = 1 if options.quick else options.repeats
    found = measure(repeats)
    assert found[SHIPPED]["ok"]
    assert not found["one wrong machine, full exploration"]["ok"]
    print(f"Python {sys.version.split()[0]}; best of {repeats} runs each")
    print(f"{'case':<38} {'wall s':>7} {'CPU s':>7} {'configurations':>15}  verdict")
    for name, row in found.items():
        verdict = "ok" if row["ok"] else "fails"
        print(
            f"{name:<38} {row['wall_s']:>7.2f} {row['cpu_s']:>7.2f} "
            f"{row['configurations']:>15,}  {verdict}"
        )
    if options.json is not None:
        options.json.write_text(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
