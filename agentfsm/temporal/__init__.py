"""agentfsm on Temporal: each run one workflow, the same verified machines inside.

Needs the ``temporal`` extra (``pip install agentfsm[temporal]``); importing this package
imports nothing of Temporal until one of its names is used (so the command line stays fast).

- `create_worker` / `run_worker`: a worker running the runs of a task queue.
- `TemporalRuns` / `TemporalRun`: start runs and drive them with the Agent's methods.
- `RunWorkflow`: the workflow; `RunSettings`: its timeouts (the takeover knobs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentfsm.temporal.client import TemporalRun, TemporalRuns
    from agentfsm.temporal.payloads import RunSettings, RunStart
    from agentfsm.temporal.worker import create_worker, run_worker
    from agentfsm.temporal.workflow import RunWorkflow

_WHERE = {
    "RunSettings": "payloads",
    "RunStart": "payloads",
    "RunWorkflow": "workflow",
    "TemporalRun": "client",
    "TemporalRuns": "client",
    "create_worker": "worker",
    "run_worker": "worker",
}

__all__ = [
    "RunSettings",
    "RunStart",
    "RunWorkflow",
    "TemporalRun",
    "TemporalRuns",
    "create_worker",
    "run_worker",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'agentfsm.temporal' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agentfsm.temporal.{module}"), name)
