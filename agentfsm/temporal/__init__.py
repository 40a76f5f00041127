"""agentfsm on Temporal: each run one workflow, the same verified machines inside.

Needs the ``temporal`` extra (``pip install agentfsm[temporal]``).

- `create_worker` / `run_worker`: a worker running the runs of a task queue.
- `TemporalRuns` / `TemporalRun`: start runs and drive them with the Agent's methods.
- `RunWorkflow`: the workflow; `RunSettings`: its timeouts (the takeover knobs).
"""

from agentfsm.temporal.client import TemporalRun, TemporalRuns
from agentfsm.temporal.payloads import RunSettings, RunStart
from agentfsm.temporal.worker import create_worker, run_worker
from agentfsm.temporal.workflow import RunWorkflow

__all__ = [
    "RunSettings",
    "RunStart",
    "RunWorkflow",
    "TemporalRun",
    "TemporalRuns",
    "create_worker",
    "run_worker",
]
