"""The exhaustive verifier of the machines, and the conformance check of recorded runs.

`verify` explores every reachable configuration of RunLifecycle and TurnLoop (or of
classes declared like them) by sending real events through their compiled machines, and
checks the invariants of docs/contract.md on all of them; `check_log` replays a recorded
event log through fresh machines and reports where it stops being a legal path.
"""

from __future__ import annotations

from agentfsm.verify.diagram import Counterexample, Step
from agentfsm.verify.domains import (
    Arguments,
    Domains,
    KeyPart,
    default_domains,
    turn_limit_reached,
    valuations,
)
from agentfsm.verify.log_check import (
    Divergence,
    DivergenceKind,
    LogCheck,
    check_log,
    recorded_config,
)
from agentfsm.verify.report import (
    PROPERTIES,
    WARNINGS,
    PropertyResult,
    Status,
    VerificationReport,
)
from agentfsm.verify.tree import TreeFinding, TreeReport, verify_tree
from agentfsm.verify.verifier import load_class, verify

__all__ = [
    "PROPERTIES",
    "WARNINGS",
    "Arguments",
    "Counterexample",
    "Divergence",
    "DivergenceKind",
    "Domains",
    "KeyPart",
    "LogCheck",
    "PropertyResult",
    "Status",
    "Step",
    "TreeFinding",
    "TreeReport",
    "VerificationReport",
    "check_log",
    "default_domains",
    "load_class",
    "recorded_config",
    "turn_limit_reached",
    "valuations",
    "verify",
    "verify_tree",
]
