"""What run leases cost a durable run: the same runs with leases and without, as a ratio.

The workload of `bench_persist` (runs of `ITERATIONS` iterations, three tool calls each, on
a zero-latency scripted model) on each store that keeps leases, once with the Agent's default
`LeasePolicy` and once with ``lease=None``, interleaved run by run in one process (which goes
first alternates): the ratio is each repetition's leased time over its unleased time, and the
row its median (the target, `benchmarks.targets.LEASE_RATIO`: at most 1.05). A lease costs
no statement and no commit of its own per save (it is two columns of the save's own
``UPDATE``, and the hold is registered once per step), so the ratio should be close to 1;
the extra µs per save is the median difference over the saves of a run (the stored version
of a finished run: one per save).

Run: ``.venv/bin/python benchmarks/bench_leases.py [--json PATH] [--quick] [--sqlite]``;
``--sqlite`` measures MemoryStore and SQLite only (no PostgreSQL server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm import Agent, MemoryStore, RunStore, SQLiteStore
from agentfsm.stores import LeasePolicy
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from benchmarks.loops.agentfsm_loop import TOOLS, BenchModel
from benchmarks.loops.workload import FINAL, PROMPT

ITERATIONS = 10
REPEATS = 15
RUNS = 8  # per sample
FAST_RUNS = 64
"""Per sample on MemoryStore, whose runs take a tenth of a durable store's: a sample as long
as theirs, so that a moment of the shared machine's noise weighs as little in its ratio."""


def run_seconds(store: RunStore, runs: int, lease: LeasePolicy) -> tuple[float, float, int]:
    """Seconds for ``runs`` runs on ``store`` with ``lease`` and as many without; saves per run.

    The runs alternate one by one (leased, unleased; then unleased, leased; …), so that the
    machine's drift (a shared disk's fsync latency moves from one moment to the next) hits
    both alike.
    """

    async def one(policy: LeasePolicy | None) -> tuple[float, str]:
        agent = Agent(
            BenchModel(ITERATIONS),
            TOOLS,
            max_iterations=ITERATIONS,
            ask_user=False,
            store=store,
            lease=policy,
        )
        start = time.perf_counter()
        outcome = await agent.astart(PROMPT)
        took = time.perf_counter() - start
        if outcome.reply != FINAL:
            raise AssertionError(f"a run answered {outcome.reply!r}")
        return took, agent.run_id

    async def many() -> tuple[float, float, str]:
        leased = plain = 0.0
        run_id = ""
        for n in range(runs):
            for policy in (lease, None) if n % 2 == 0 else (None, lease):
                took, ran = await one(policy)
                if policy is None:
                    plain += took
                else:
                    leased, run_id = leased + took, ran
        return leased, plain, run_id

    leased, plain, run_id = asyncio.run(many())
    stored = store.load(run_id)
    return leased, plain, 0 if stored is None else stored.version


def measure(directory: Path, repeats: int, *, sqlite_only: bool) -> dict[str, object]:
    """Per store: µs per run with and without leases, their ratio, and µs per save."""
    with ExitStack() as stack:
        stores: dict[str, RunStore] = {"MemoryStore": MemoryStore()}
        stores["SQLiteStore NORMAL"] = SQLiteStore(directory / "normal.db", synchronous="NORMAL")
        stores["SQLiteStore FULL"] = SQLiteStore(directory / "full.db")
        if not sqlite_only:
            server = stack.enter_context(TemporaryPostgres(durable=True))
            stores["PostgresStore"] = PostgresStore(server.new_database())
        for store in stores.values():
            stack.enter_context(store)
        leased: dict[str, list[float]] = {name: [] for name in stores}
        plain: dict[str, list[float]] = {name: [] for name in stores}
        ratios: dict[str, list[float]] = {name: [] for name in stores}
        saves: dict[str, int] = {}
        policy = LeasePolicy()
        for _ in range(repeats):
            for name, store in stores.items():  # interleaved, run by run
                runs = FAST_RUNS if isinstance(store, MemoryStore) else RUNS
                with_lease, without, saves[name] = run_seconds(store, runs, policy)
                leased[name].append(with_lease / runs * 1e6)
                plain[name].append(without / runs * 1e6)
                ratios[name].append(with_lease / without)
        return {
            "iterations": ITERATIONS,
            "repeats": repeats,
            "saves_per_run": saves,
            "leased_run_us": {n: statistics.median(v) for n, v in leased.items()},
            "plain_run_us": {n: statistics.median(v) for n, v in plain.items()},
            "ratio": {n: statistics.median(v) for n, v in ratios.items()},
            "per_save_us": {
                n: statistics.median(a - b for a, b in zip(leased[n], plain[n], strict=True))
                / max(saves[n], 1)
                for n in stores
            },
        }
    raise AssertionError("unreachable")  # pragma: no cover - mypy: ExitStack may swallow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for a smoke run")
    parser.add_argument("--sqlite", action="store_true", help="no PostgreSQL server")
    options = parser.parse_args()
    repeats = 3 if options.quick else REPEATS
    with tempfile.TemporaryDirectory() as directory:
        results = measure(Path(directory), repeats, sqlite_only=options.sqlite)
    print(
        f"Leases: runs of {ITERATIONS} iterations with the default LeasePolicy and with "
        f"lease=None, interleaved; medians of {repeats} repetitions"
    )
    print(
        f"{'store':<20} {'µs/run leased':>14} {'µs/run none':>12} {'ratio':>7} "
        f"{'µs/save':>8} {'saves/run':>9}"
    )
    for name, ratio in results["ratio"].items():  # type: ignore[attr-defined]
        print(
            f"{name:<20} {results['leased_run_us'][name]:>14,.0f} "  # type: ignore[index]
            f"{results['plain_run_us'][name]:>12,.0f} {ratio:>7.3f} "  # type: ignore[index]
            f"{results['per_save_us'][name]:>8.1f} {results['saves_per_run'][name]:>9}"  # type: ignore[index]
        )
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
