"""The plot of `report`: µs per iteration by implementation, with the hand-written limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: write the file only (before pyplot is imported)

import matplotlib.pyplot as plt

COLOURS = {
    "hand-written": "#7f7f7f",
    "agentfsm": "#1f77b4",
    "agentfsm, fast extra": "#17becf",
    "python-statemachine": "#9467bd",
    "pydantic-graph": "#e377c2",
    "burr": "#ff7f0e",
    "langgraph": "#2ca02c",
}


def plot_overhead(overhead: dict[str, Any], path: Path) -> None:
    """Horizontal bars of the median µs per iteration, whiskers from min to max."""
    rows = overhead["per_iteration"]
    names = list(rows)[::-1]  # the first candidate on top
    medians = [rows[name]["us"] for name in names]
    low = [rows[name]["us"] - rows[name]["min"] for name in names]
    high = [rows[name]["max"] - rows[name]["us"] for name in names]
    colours = [COLOURS.get(overhead["frameworks"][name], "#333333") for name in names]
    figure, axes = plt.subplots(figsize=(10, 0.45 * len(names) + 1.4))
    axes.barh(names, medians, xerr=[low, high], color=colours, capsize=3)
    for index, name in enumerate(names):
        axes.text(
            medians[index] + high[index] + max(medians) * 0.01,
            index,
            f"{medians[index]:,.0f} µs  ({rows[name]['ratio']:.1f}x)",
            va="center",
            fontsize=8,
        )
    axes.axvline(rows[overhead["baseline"]]["us"], color="#7f7f7f", linestyle=":", linewidth=1)
    axes.set_xlabel(
        f"µs per iteration (runs of {overhead['iterations']} iterations, median of "
        f"{overhead['repeats']}, whiskers min-max)\nx = ratio to the hand-written loop (dotted)"
    )
    axes.set_xlim(0, max(m + h for m, h in zip(medians, high, strict=True)) * 1.25)
    axes.set_title("One agent-loop iteration: a model reply + 3 validated tool calls")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
