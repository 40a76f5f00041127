"""``agentfsm simulate``: run the deterministic simulation of `agentfsm.testing.sim` for a seed.

A failure prints its seed, the broken invariant and the tail of its trace, and exits 1; the
same command reruns it to the same failure.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from agentfsm._terminal import terminal_safe
from agentfsm.errors import AgentFSMError
from agentfsm.stores.base import RunStore
from agentfsm.stores.memory import MemoryStore
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.stores.urls import open_store

if TYPE_CHECKING:  # (imported when the command runs: the CLI starts without it)
    from agentfsm.testing.sim import SimulationReport as Report
    from agentfsm.testing.sim import World

STORE_HELP = (
    "where the simulated processes keep their runs: memory (the default), sqlite (a "
    "temporary file), or a store URL of an empty store (sqlite:///PATH, postgresql://…; "
    "'postgres URL' also works)"
)


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _positive(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def add_simulate_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``simulate`` to the command line's subcommands."""
    simulate = commands.add_parser(
        "simulate",
        help="run the deterministic simulation (processes, store faults, crashes) for a seed",
        description="Run agentfsm's deterministic simulation: processes sharing one store, "
        "with crashes, failed and unacknowledged saves, conflicts, timeouts and outages, all "
        "chosen by the seed; the store is checked after every step. A failure prints the "
        "seed and the tail of its trace and exits 1; the same command reruns it.",
    )
    simulate.add_argument("--seed", type=_whole, required=True, help="the seed to simulate")
    simulate.add_argument(
        "--count", type=_positive, default=1, help="seeds to run: SEED, SEED+1, … (default 1)"
    )
    simulate.add_argument(
        "--steps", type=_positive, default=200, help="moves per seed (default 200)"
    )
    simulate.add_argument(
        "--store", nargs="+", default=["memory"], metavar="STORE", help=STORE_HELP
    )
    simulate.add_argument(
        "--world",
        metavar="MODULE:CLASS",
        help="a World subclass building your own agent (the current directory is importable)",
    )
    simulate.add_argument(
        "--trace", action="store_true", help="print every seed's whole trace, not only a failure's"
    )


@contextmanager
def _store(words: list[str]) -> Iterator[RunStore]:
    kind = words[-1] if len(words) == 2 and words[0] in ("postgres", "postgresql") else words[0]
    if len(words) > 2 or (len(words) == 2 and kind == words[0]):
        raise ValueError(f"--store takes one STORE or 'postgres URL', not {' '.join(words)!r}")
    if kind == "memory":
        yield MemoryStore()
        return
    if kind == "sqlite":
        with (
            tempfile.TemporaryDirectory(prefix="agentfsm-sim-") as folder,
            SQLiteStore(Path(folder) / "runs.db") as store,
        ):
            yield store
        return
    with open_store(kind) as store:
        if store.list_runs():
            raise ValueError(
                "the simulation needs an empty store: this one holds runs already "
                "(name a fresh database)"
            )
        yield store


def _named(words: list[str]) -> bool:
    """Whether ``--store`` names a store of the user's (a URL), not a throwaway one."""
    return words[-1] not in ("memory", "sqlite")


def _world(reference: str | None) -> World | None:
    from agentfsm.testing.sim import World

    if reference is None:
        return None
    module_name, _, name = reference.partition(":")
    if not module_name or not name:
        raise ValueError(f"--world must be MODULE:CLASS, not {reference!r}")
    sys.path.insert(0, ".")
    try:
        world: object = getattr(importlib.import_module(module_name), name)()
    except (ImportError, AttributeError) as error:
        raise ValueError(f"--world {reference}: {error}") from error
    finally:
        sys.path.remove(".")
    if not isinstance(world, World):
        raise ValueError(f"--world {reference} is not an agentfsm.testing.sim.World")
    return world


def simulate_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``agentfsm simulate``; 0 when every seed holds, 1 on a violation or an error."""
    try:
        world = _world(args.world)
        failed: dict[str, list[int]] = {}
        faults: Counter[str] = Counter()
        for seed in range(args.seed, args.seed + args.count):
            report = _one_seed(args, seed, world, out)
            faults.update(report.faults)
            if report.violation is not None:
                failed.setdefault(report.violation.invariant, []).append(seed)
                if _named(args.store):
                    print("its runs stay in the store: agentfsm runs --store URL", file=out)
                    break
    except (AgentFSMError, ValueError, ImportError, AttributeError, OSError) as error:
        print(f"agentfsm simulate: error: {terminal_safe(str(error))}", file=sys.stderr)
        return 1
    if args.count > 1:
        print(_totals(args.count, faults, failed), file=out)
    return 1 if failed else 0


def _one_seed(args: argparse.Namespace, seed: int, world: World | None, out: TextIO) -> Report:
    """Simulate ``seed`` and print what came of it (its failure in full)."""
    from agentfsm.testing.sim import Simulation

    with _store(list(args.store)) as store:
        report = Simulation(seed, store, steps=args.steps, world=world).run()
        if report.ok and _named(args.store):
            for run in store.list_runs():  # (the simulation's: the store was empty)
                store.delete(run.run_id)
    if args.trace:
        print("\n".join(report.trace), file=out)
    print(report.summary(), file=out)
    if report.violation is not None:
        rerun = f"agentfsm simulate --seed {seed} --steps {args.steps}"
        if args.store != ["memory"]:
            rerun += " --store " + " ".join(args.store)
        if args.world is not None:
            rerun += f" --world {args.world}"
        print(report.failure(rerun=rerun), file=out)
    return report


def _totals(seeds: int, faults: Counter[str], failed: dict[str, list[int]]) -> str:
    struck = ", ".join(f"{kind} {count}" for kind, count in sorted(faults.items()))
    found = "; ".join(f"{name}: seeds {seeds}" for name, seeds in sorted(failed.items()))
    return (
        f"{seeds} seeds, {sum(faults.values())} faults ({struck or 'none'}), "
        f"{sum(len(s) for s in failed.values())} violations{': ' + found if found else ''}"
    )
