"""An agent as a worker holds it: what runs in the workflow, what runs in activities.

The worker calls the application's factory once, at start-up, and takes the Agent it returns
apart. Its configuration, tool declarations (schemas, policies) and hooks run inside the
workflow, so they must be deterministic; its model and tool bodies run in activities. What
cannot run inside a workflow is refused here, at start-up, with a `ValueError` saying why.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from agentfsm.agent.core import Agent
from agentfsm.llm.base import Model
from agentfsm.states.names import InputPolicy
from agentfsm.tools.hooks import Hooks
from agentfsm.tools.registry import ToolRegistry

AgentFactory = Callable[[], Agent]
"""What a worker is given per agent: a callable returning a configured `Agent`."""


@dataclass(frozen=True)
class AgentTemplate:
    """The parts of an Agent a worker runs: some in the workflow, some in activities.

    Attributes:
        name: The agent's name (what a `RunStart` names).
        model: The model, called in the model activity.
        registry: The tools: declarations checked in the workflow, bodies run in activities.
        hooks: The hook handlers (run in the workflow: they must be deterministic).
        system_prompt: The conversation's first message.
        max_iterations: Model calls allowed per turn.
        max_turns: Turns allowed per run.
        input_policy: What a submit while busy does.
        enabled_tools: The tools offered (None: all).
        action_timeout: Seconds an approval may take (a durable timer).
        input_timeout: Seconds an answer may take (a durable timer).
        context_window: The model's context window, if set.
        max_attempts: Tries in all for an idempotent tool's retryable failures.
        cancel_grace: Seconds a timed-out async tool body gets to finish cancelling.
        deps: The factory's Agent's dependencies: the worker process's objects, given to
            tool bodies (in activities) as ``ToolContext.deps``.
    """

    name: str
    model: Model
    registry: ToolRegistry
    hooks: Hooks
    system_prompt: str | None
    max_iterations: int
    max_turns: int | None
    input_policy: InputPolicy
    enabled_tools: frozenset[str] | None
    action_timeout: float | None
    input_timeout: float | None
    context_window: int | None
    max_attempts: int
    cancel_grace: float = 0.1
    deps: object = None


def _refuse(name: str, problem: str) -> None:
    raise ValueError(f"agent {name!r} cannot run as a Temporal workflow: {problem}")


def template_of(name: str, agent: object) -> AgentTemplate:
    """Take ``agent`` apart for a worker, refusing what cannot run in a workflow.

    Args:
        name: The agent's name.
        agent: What the factory returned.

    Raises:
        TypeError: ``agent`` is not an `Agent`.
        ValueError: It has listeners (side effects the workflow would repeat on replay), a
            store (the worker's store is the run's), its own clock or timer (the workflow's
            clock is the durable one), a run already started, or model settings (not
            carried into a workflow yet: refused rather than dropped).
    """
    if not isinstance(agent, Agent):
        raise TypeError(
            f"the factory of agent {name!r} must return an agentfsm Agent, "
            f"not {type(agent).__name__}"
        )
    if agent._listeners:
        _refuse(
            name,
            f"it has {len(agent._listeners)} listener(s); a listener is a side effect that "
            "replay would repeat: watch the worker's store instead (agentfsm runs / the live "
            "view), or put the effect in a tool",
        )
    if agent.store is not None:
        _refuse(name, "it has a store; the worker's store holds every run it executes")
    if agent._clock is not time.time or agent._timer is not time.perf_counter:
        _refuse(name, "it has its own clock or timer; the workflow's durable clock is used")
    if agent.state != "created":
        _refuse(name, f"the factory returned a run already started (state {agent.state!r})")
    if agent.settings is not None:
        _refuse(name, "it has model settings, which a workflow does not carry yet")
    max_iterations, max_turns, input_policy = agent._config
    return AgentTemplate(
        name=name,
        model=agent.model,
        registry=agent.tools.registry,
        hooks=agent.hooks,
        system_prompt=agent._system_prompt,
        max_iterations=max_iterations,
        max_turns=max_turns,
        input_policy=input_policy,
        enabled_tools=agent.enabled_tools,
        action_timeout=agent.action_timeout,
        input_timeout=agent.input_timeout,
        context_window=agent.context_window,
        max_attempts=agent.tools._retry.max_attempts,
        cancel_grace=agent.tools._retry.cancel_grace,
        deps=agent._deps,
    )


def load_factory(spec: str) -> AgentFactory:
    """The factory ``module:attribute`` names (as ``agentfsm worker --agent`` takes it).

    Raises:
        ValueError: ``spec`` is not ``module:attribute``, or names nothing callable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"--agent is {spec!r}; expected module:factory (myapp.agents:make)")
    module = importlib.import_module(module_name)
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"--agent {spec!r}: module {module_name!r} has no callable {attribute!r}")
    return factory  # type: ignore[no-any-return]


TEMPLATES: dict[str, AgentTemplate] = {}
"""The agents of the workers of this process, by name, for the workflows they run."""
