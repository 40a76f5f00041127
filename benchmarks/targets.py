"""The targets of ``docs/…/performance.md``, checked against one `report` run's results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

AGENTFSM = "agentfsm Agent, async"
"""The implementation the iteration targets are about: the Agent's async core."""
AGENT_MEMORY = "agentfsm Agent, started (ask_user=False)"
"""The idle run the memory target is about."""
DURABLE_RUN_RATIO = 3.0
"""A durable run on SQLite synchronous=FULL costs at most this many times the same run with
no store (issue 22: group commit)."""
DURABLE_STORE = "SQLiteStore FULL"
"""The store the durable-run target is about."""
BURR = "Apache Burr"
LANGGRAPH = "LangGraph StateGraph"


@dataclass(frozen=True)
class Target:
    """One target: what it asks, what was measured, and whether it was met."""

    goal: str
    measured: str
    met: bool


def check_targets(results: dict[str, Any]) -> list[Target]:
    """Each target of performance.md, met or missed, from `report`'s results."""
    per_iteration = results["overhead"]["per_iteration"]
    ours = per_iteration[AGENTFSM]
    burr = ours["us"] / per_iteration[BURR]["us"]
    langgraph = ours["us"] / per_iteration[LANGGRAPH]["us"]
    idle = results["memory"]["bytes_per_idle_run"][AGENT_MEMORY]
    concurrent = results["concurrency"]["candidates"][AGENTFSM]
    hand_concurrent = results["concurrency"]["candidates"]["hand-written loop, async"]
    raw_save = results["store"]["persist one transition"]["SQLiteStore FULL"]
    persist = results["persist"]["per_saved_event_us"]["SQLiteStore FULL"]
    resume = results["persist"]["resume_us"]["SQLiteStore FULL"]
    return [
        Target(
            "per iteration ≤ 2x the hand-written loop",
            f"{ours['ratio']:.2f}x ({ours['us']:.0f} µs)",
            ours["ratio"] <= 2,
        ),
        Target("per iteration ≤ 1/10 of Burr's", f"1/{1 / burr:.1f}", burr <= 1 / 10),
        Target(
            "per iteration ≤ 1/40 of LangGraph's", f"1/{1 / langgraph:.1f}", langgraph <= 1 / 40
        ),
        Target("≤ 2 KB per idle run (Agent)", f"{idle:,.0f} bytes", idle <= 2048),
        Target(
            f"{results['concurrency']['runs']:,} concurrent runs within 1.2x the latency bound",
            f"{concurrent['ratio_to_bound']:.1f}x (hand-written loop: "
            f"{hand_concurrent['ratio_to_bound']:.1f}x)",
            concurrent["ratio_to_bound"] <= 1.2,
        ),
        Target(
            "SQLite persist of one transition ≤ a few hundred µs",
            f"{persist:.0f} µs per event saved by the Agent, synchronous=FULL "
            f"(the store alone, 4 messages: {raw_save:.0f} µs)",
            persist <= 500,
        ),
        Target(
            "SQLite resume ≤ 1 ms",
            f"{resume:.0f} µs (Agent of a finished {results['persist']['iterations']}-iteration "
            "run, synchronous=FULL)",
            resume <= 1000,
        ),
        durable_run_target(results["persist"]),
    ]


def durable_run_target(persist: dict[str, Any]) -> Target:
    """The durable-run ratio on SQLite FULL, every store's beside it, from `bench_persist`."""
    ratios = persist["durable_run_ratio"]
    full = ratios[DURABLE_STORE]
    others = ", ".join(
        f"{name} {ratio:.1f}x"
        for name, ratio in ratios.items()
        if name not in (DURABLE_STORE, "no store") and not name.startswith("LangGraph")
    )
    saves = persist.get("saves_per_run", {}).get(DURABLE_STORE)
    each = "" if saves is None else f", {saves} fsync'd saves per run"
    fsync = persist.get("fsync_commit_us")
    if saves is not None and fsync is not None:
        bare = persist["per_iteration_us"]["no store"] * persist["iterations"]
        each += (
            f" (one fsync'd commit of one row: {fsync:.0f} µs here, "
            f"{fsync / bare:.2f}x a run with no store)"
        )
    return Target(
        f"durable {persist['iterations']}-iteration run on SQLite synchronous=FULL "
        f"≤ {DURABLE_RUN_RATIO:g}x the same run with no store",
        f"{full:.1f}x{each} ({others})",
        full <= DURABLE_RUN_RATIO,
    )
