"""Helpers for testing agents built with agentfsm (the ``testing`` extra).

- `AgentStateMachine`: subclass it and implement ``make_agent`` to property-test your own
  Agent (tools, hooks, store) with hypothesis; it checks the contract's invariants after
  every step.
- `FaultInjectingMachine`: the same, also arming faults (exceptions, `KeyboardInterrupt`,
  `SystemExit`, cancellations, re-entrant calls) at every callback point of your agent and
  checking that no failure strands the run (I12, I13).
- Strategies (`model_responses`, `tool_calls`, `decisions`, `event_sequences`…) for your
  own hypothesis tests; the tool-call strategies follow your tools' JSON Schemas.
- Invariant checks (`assert_history_valid`, `assert_tools_permitted`, `DurabilityProbe`…)
  for hand-written tests, and `FakeClock`.
- Hypothesis profiles `CI_PROFILE` (derandomised) and `NIGHTLY_PROFILE`, and a pytest plugin
  with the `scripted_model` and `fake_clock` fixtures.
- `LoopbackOpenAIServer`: an OpenAI-compatible chat completions server on 127.0.0.1 that
  answers from a script of `Reply` steps and faults, for end-to-end tests with no network.
- `agentfsm.testing.sim`: a deterministic simulation of several processes over one store,
  with crashes and store faults, all chosen by one seed that replays any failure (its own
  subpackage; ``agentfsm simulate --seed N`` runs it).

The names built on hypothesis are imported on first use, so ``import agentfsm.testing``
works without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from agentfsm.errors import InvariantError
from agentfsm.testing.clock import FakeClock
from agentfsm.testing.invariants import (
    DurabilityProbe,
    assert_history_valid,
    assert_iterations_within_cap,
    assert_pending_valid,
    assert_tools_permitted,
    assert_tree_valid,
    is_transition,
)
from agentfsm.testing.openai_server import (
    CutConnection,
    Disconnect,
    EmptyChoices,
    ErrorResponse,
    LoopbackOpenAIServer,
    MalformedBody,
    MalformedChunk,
    RecordedRequest,
    Reply,
    Responder,
    Step,
    TruncatedStream,
)

if TYPE_CHECKING:
    from agentfsm.testing.faults import (
        Fault,
        FaultInjectingMachine,
        FaultInjector,
        FaultKind,
        InjectedError,
        InjectedInterrupt,
        fault_points,
        injected_faults,
    )
    from agentfsm.testing.profiles import (
        CI_PROFILE,
        DEV_PROFILE,
        NIGHTLY_PROFILE,
        load_profile_from_environment,
        register_profiles,
    )
    from agentfsm.testing.stateful import FALLBACK_ANSWER, AgentStateMachine
    from agentfsm.testing.strategies import (
        ModelStep,
        call_arguments,
        decisions,
        event_arguments,
        event_sends,
        event_sequences,
        invalid_arguments,
        json_values,
        malformed_arguments,
        model_errors,
        model_responses,
        text_responses,
        tool_call_batches,
        tool_calls,
        user_inputs,
        valid_arguments,
    )

_NEEDS_HYPOTHESIS = {
    "agentfsm.testing.profiles": (
        "CI_PROFILE",
        "DEV_PROFILE",
        "NIGHTLY_PROFILE",
        "load_profile_from_environment",
        "register_profiles",
    ),
    "agentfsm.testing.stateful": ("FALLBACK_ANSWER", "AgentStateMachine"),
    "agentfsm.testing.faults": (
        "Fault",
        "FaultInjectingMachine",
        "FaultInjector",
        "FaultKind",
        "InjectedError",
        "InjectedInterrupt",
        "fault_points",
        "injected_faults",
    ),
    "agentfsm.testing.strategies": (
        "ModelStep",
        "call_arguments",
        "decisions",
        "event_arguments",
        "event_sends",
        "event_sequences",
        "invalid_arguments",
        "json_values",
        "malformed_arguments",
        "model_errors",
        "model_responses",
        "text_responses",
        "tool_call_batches",
        "tool_calls",
        "user_inputs",
        "valid_arguments",
    ),
}
_LAZY = {name: module for module, names in _NEEDS_HYPOTHESIS.items() for name in names}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentfsm.testing' has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CI_PROFILE",
    "DEV_PROFILE",
    "FALLBACK_ANSWER",
    "NIGHTLY_PROFILE",
    "AgentStateMachine",
    "CutConnection",
    "Disconnect",
    "DurabilityProbe",
    "EmptyChoices",
    "ErrorResponse",
    "FakeClock",
    "Fault",
    "FaultInjectingMachine",
    "FaultInjector",
    "FaultKind",
    "InjectedError",
    "InjectedInterrupt",
    "InvariantError",
    "LoopbackOpenAIServer",
    "MalformedBody",
    "MalformedChunk",
    "ModelStep",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Step",
    "TruncatedStream",
    "assert_history_valid",
    "assert_iterations_within_cap",
    "assert_pending_valid",
    "assert_tools_permitted",
    "assert_tree_valid",
    "call_arguments",
    "decisions",
    "event_arguments",
    "event_sends",
    "event_sequences",
    "fault_points",
    "injected_faults",
    "invalid_arguments",
    "is_transition",
    "json_values",
    "load_profile_from_environment",
    "malformed_arguments",
    "model_errors",
    "model_responses",
    "register_profiles",
    "text_responses",
    "tool_call_batches",
    "tool_calls",
    "user_inputs",
    "valid_arguments",
]
