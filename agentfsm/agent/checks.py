"""The Agent's argument checks: bad input refused at the door, before anything changes.

Each public entry point of the `Agent` calls one of these on its first line. They raise
`TypeError` (a value of the wrong kind) or `ValueError` (the right kind, out of range) with
a message naming the argument, what was given and what is allowed; the run's state, its
conversation and its store are as they were.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from agentfsm import _checks as checks
from agentfsm.agent.output import FINAL_ANSWER, OutputSpec
from agentfsm.agent.vocabulary import ASK_USER, AgentListener
from agentfsm.errors import GuardFailedError, IllegalTransitionError
from agentfsm.fsm.compiled import describe_guard
from agentfsm.states.names import InputPolicy, RunState
from agentfsm.stores.base import RunStore
from agentfsm.stores.leases import LeasePolicy
from agentfsm.stores.snapshot import Snapshot
from agentfsm.tools.checks import tool_items
from agentfsm.tools.hooks import Hooks
from agentfsm.tools.registry import ToolRegistry
from agentfsm.tools.sources import ToolSource

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent

_ENGINES = ("compiled", "reference")
_PAUSED = RunState.PAUSED
_SHUTDOWN = RunState.SHUTDOWN
_POLICIES = tuple(p.value for p in InputPolicy)


def _model(model: object) -> None:
    if isinstance(model, str):
        checks.text("model", model)
        return
    if not (callable(getattr(model, "complete", None)) and hasattr(model, "name")):
        checks.refuse_type(
            "model",
            model,
            "a Model (an object with .name and async .complete(...), such as OpenAIModel) or "
            "a spec string such as 'openai:gpt-4o-mini' or 'scripted:demo'",
        )


def tool_sources(sources: object) -> tuple[ToolSource, ...]:
    """Check ``mcp_servers``: tool sources (`MCPServer`, any `ToolSource`), prefixes unique.

    Raises:
        TypeError: Not an iterable of tool sources.
        ValueError: Two sources share a prefix.
    """
    if type(sources) is tuple and not sources:  # (the default: no source)
        return ()
    allowed = "an iterable of tool sources such as agentfsm.tools.mcp.MCPServer(...)"
    if isinstance(sources, (str, bytes, Mapping)) or not isinstance(sources, Iterable):
        checks.refuse_type("mcp_servers", sources, allowed)
    found = tuple(sources)
    for source in found:
        if not isinstance(source, ToolSource):
            raise TypeError(f"mcp_servers must be {allowed}; it holds {checks.given(source)}")
    prefixes = [source.prefix for source in found]
    twice = sorted({prefix for prefix in prefixes if prefixes.count(prefix) > 1})
    if twice:
        raise ValueError(
            f"mcp_servers must each have a prefix of their own; {twice!r} is used more than once"
        )
    return found


def _store(store: object) -> None:
    if store is None or isinstance(store, RunStore):
        return
    hint = " (a path: pass SQLiteStore(path))" if isinstance(store, str) else ""
    checks.refuse_type("store", store, f"a RunStore such as SQLiteStore(...) or None{hint}")


def _hooks(hooks: object) -> None:
    if hooks is not None and not isinstance(hooks, (Hooks, Mapping)):
        checks.refuse_type("hooks", hooks, "a Hooks, a mapping of hook to handler(s), or None")


def _listeners(listeners: object) -> None:
    kind = type(listeners)
    if (
        kind is not list
        and kind is not tuple
        and (isinstance(listeners, (str, bytes)) or not isinstance(listeners, Iterable))
    ):
        checks.refuse_type("listeners", listeners, "an iterable of callables")
    for listener in listeners if kind is list or kind is tuple else ():  # type: ignore[attr-defined]
        if not callable(listener):
            raise TypeError(
                f"listeners must be an iterable of callables; it holds {checks.given(listener)}"
            )


def usual(arguments: Mapping[str, object]) -> bool:
    """Whether `agent_arguments` would accept every argument but model, tools and listeners.

    A cheap first look, for the Agent built once per run: True only for the arguments'
    defaults and the plainest values of their types (each an exact type, checked by
    identity where it can be), which the full checks accept. False says nothing: the full
    checks then run. A property test pins that nothing it accepts is refused by them.
    """
    a = arguments
    max_iterations, max_turns, prompt = a["max_iterations"], a["max_turns"], a["system_prompt"]
    return (
        type(max_iterations) is int
        and max_iterations >= 1
        and (max_turns is None or (type(max_turns) is int and max_turns >= 1))
        and (prompt is None or type(prompt) is str)
        and type(a["input_policy"]) is InputPolicy
        and a["hooks"] is None
        and a["run_id"] is None
        and a["user_id"] is None
        and a["enabled_tools"] is None
        and type(a["ask_user"]) is bool
        and a["action_timeout"] is None
        and a["input_timeout"] is None
        and a["clock"] is time.time
        and a["timer"] is time.perf_counter
        and type(a["engine"]) is str
        and a["engine"] in _ENGINES
        and a["store"] is None
        and a["context_window"] is None
    )


def agent_arguments(arguments: Mapping[str, object]) -> None:
    """Check the `Agent` constructor's arguments (its ``locals()`` on entry).

    Raises:
        TypeError: An argument of the wrong type (``Agent(123)``, ``tools="weather"``,
            ``store="runs.db"``, ``max_turns="x"``, ``enabled_tools="weather"``…).
        ValueError: A value out of range (``max_turns=-2``, ``action_timeout=-5``, an
            unknown ``input_policy`` or ``engine``, an empty ``run_id``…).
    """
    _model(arguments["model"])
    tools = arguments["tools"]
    if (
        type(tools) is not list
        and type(tools) is not tuple
        and not isinstance(tools, ToolRegistry)
    ):
        tool_items("tools", tools)  # (a list or a tuple passes it)
    lease = arguments.get("lease")
    if lease is not None and not isinstance(lease, LeasePolicy):
        checks.refuse_type("lease", lease, "a LeasePolicy (agentfsm.stores), or None")
    if usual(arguments):  # (an Agent per run: most are built with the defaults)
        _listeners(arguments["listeners"])
    else:
        other_arguments(arguments)


def other_arguments(arguments: Mapping[str, object]) -> None:
    """`agent_arguments`' checks of every argument but the model and the tools.

    Raises:
        TypeError: An argument of the wrong type.
        ValueError: A value out of range.
    """
    checks.text("system_prompt", arguments["system_prompt"], empty=True, optional=True)
    checks.whole("max_iterations", arguments["max_iterations"], minimum=1)
    checks.whole("max_turns", arguments["max_turns"], minimum=1, optional=True)
    checks.choice("input_policy", arguments["input_policy"], _POLICIES)
    _hooks(arguments["hooks"])
    _listeners(arguments["listeners"])
    checks.text("run_id", arguments["run_id"], optional=True)
    checks.text("user_id", arguments["user_id"], empty=True, optional=True)
    checks.names("enabled_tools", arguments["enabled_tools"], optional=True)
    checks.flag("ask_user", arguments["ask_user"])
    checks.seconds("action_timeout", arguments["action_timeout"], optional=True)
    checks.seconds("input_timeout", arguments["input_timeout"], optional=True)
    for name in ("clock", "timer"):
        if not callable(arguments[name]):
            checks.refuse_type(name, arguments[name], "a callable returning seconds")
    checks.choice("engine", arguments["engine"], _ENGINES)
    _store(arguments["store"])
    checks.whole("context_window", arguments["context_window"], minimum=1, optional=True)


def enabled_tools(enabled: Iterable[str] | None, registry: ToolRegistry, ask_user: bool) -> None:
    """Check that ``enabled_tools`` names only registered tools (before any is added).

    Raises:
        ValueError: A name no tool has; the message lists the registered ones.
    """
    if enabled is None:
        return
    known = set(registry.names) | ({ASK_USER} if ask_user else set())
    unknown = sorted(set(enabled) - known)
    if unknown:
        raise ValueError(
            f"enabled_tools names {', '.join(map(repr, unknown))}, which no tool has; "
            f"the tools are {', '.join(map(repr, sorted(known))) or 'none'}"
        )


def final_answer_free(registry: ToolRegistry) -> None:
    """Check that no tool takes the name of the typed answer's ``final_answer`` tool.

    Raises:
        ValueError: A registered tool is named ``final_answer``.
    """
    if registry.find(FINAL_ANSWER) is not None:
        raise ValueError(
            f"tools has a tool named {FINAL_ANSWER!r}, the name an output_type needs for its "
            "final-answer tool (the model has no structured output); rename that tool"
        )


def same_output_type(stored: Snapshot, spec: OutputSpec | None) -> None:
    """Check that a run restored from its store gets the kind of output type it began with.

    Raises:
        ValueError: The run was started with an output type and none is given, or the
            other way round.
    """
    typed = stored.output_retries is not None
    if typed != (spec is not None):
        began = "with an output_type" if typed else "without an output_type"
        raise ValueError(
            f"run {stored.run_id!r} was started {began}; construct the Agent that restores "
            f"it {began} too (output_type is "
            f"{'None' if spec is None else 'given'})"
        )


def user_text(name: str, text: object) -> None:
    """Check a user's input (``submit``'s ``text``, ``provide_input``'s answer).

    An empty string is left to the run's guard (`GuardFailedError`), as the contract says.

    Raises:
        TypeError: Not a str (``b"hi"``, None, a number).
    """
    if not isinstance(text, str):
        checks.refuse_type(name, text, "a str (the user's words)")


def decisions(agent: Agent, decided: object) -> None:
    """Check ``resolve_action``'s decisions: a mapping from pending call ids.

    Raises:
        TypeError: Not a mapping (a list of decisions), or a key that is not a str.
        GuardFailedError: While the run requires action: a call id that is not pending,
            or a pending call left undecided; the message names them and the pending ids.
    """
    if not isinstance(decided, Mapping):
        checks.refuse_type(
            "decisions", decided, "a mapping of call id to decision ({'call_1': 'approve'})"
        )
    for call_id in decided:
        if not isinstance(call_id, str):
            raise TypeError(f"decisions must map call ids (str); it has the key {call_id!r}")
    if agent.state != RunState.REQUIRES_ACTION:
        return  # the run's own check refuses the event, naming the state
    pending = [call.id for call in agent.pending]
    unknown = sorted(set(decided) - set(pending))
    missing = [call_id for call_id in pending if call_id not in decided]
    if unknown or missing:
        problem = (
            f"decisions name {', '.join(map(repr, unknown))}, not pending"
            if unknown
            else f"decisions leave {', '.join(map(repr, missing))} undecided"
        )
        raise GuardFailedError(
            run_id=agent.run_id,
            machine="run",
            state=str(agent.state),
            event="resolve_action",
            allowed=agent._run.allowed_events(),
            failed_guards=(
                f"decides_every_pending_call: {problem}; the pending calls are "
                f"{', '.join(map(repr, pending))}, and each needs exactly one decision",
            ),
        )


def listener(value: object) -> None:
    """Check a listener to add: a callable.

    Raises:
        TypeError: Not callable.
    """
    if not callable(value):
        checks.refuse_type("listener", value, "a callable taking each event")


def added_listener(value: object, listeners: Sequence[AgentListener]) -> None:
    """Check a listener to remove: one that was added.

    Raises:
        ValueError: It is not among the Agent's listeners.
    """
    if value not in listeners:
        raise ValueError(
            f"listener {checks.given(value)} was never added (or was already removed); "
            f"the Agent has {len(listeners)} listener(s)"
        )


SHUT_DOWN_IS_FINAL = (
    " (a shut-down run is final: it takes no more turns and cannot be started or resumed; "
    "start a new run, with another run_id)"
)
"""What a refused call on a shut-down run says."""
PAUSED_NEEDS_RESUME = (
    " (the run is paused: call resume() to go on where it was paused{then}; a paused run "
    "goes on only when resumed)"
)
"""What a refused call on a paused run says; ``{then}`` names the call to make after."""


def startable(agent: Agent, restored: bool) -> None:
    """Refuse ``start`` where it cannot open or take up the run, saying what to do instead.

    A run restored in ``paused`` is taken up by ``start`` (claimed) and stays paused: that
    is allowed, and the calls that follow say to resume it (`open_for`).

    Raises:
        IllegalTransitionError: The run is shut down (restored or not): a shut-down run is
            final; or the run is paused and was not just restored: call ``resume()``.
            Nothing is written.
    """
    if restored and agent._data.state == _PAUSED:
        return
    open_for(agent, "start", then="")


def first_input(agent: Agent, text: str, restored: bool) -> None:
    """Check ``start``'s ``text`` (a str) before the run is started or claimed.

    Raises:
        IllegalTransitionError: The run is restored in a state other than ``ready`` (where
            ``start()`` would not leave it ready to take an input): the message says to call
            ``start()`` and then what the run awaits. Nothing changes.
        GuardFailedError: ``text`` is empty or blank, which ``submit``'s guard refuses
            (``submit_allowed``). Nothing changes: the run is not started.
    """
    state = agent._data.state
    if restored and state != RunState.CREATED and state != RunState.READY:
        raise IllegalTransitionError(
            run_id=agent.run_id,
            machine="run",
            state=str(state),
            event="start",
            allowed=agent._run.allowed_events(),
            detail=(
                " with text (a restored run takes start's text only where start() leaves "
                "it 'ready'; call start() to take it up, then the call it awaits)"
            ),
        )
    if not text.strip():
        raise GuardFailedError(
            run_id=agent.run_id,
            machine="run",
            state=str(state),
            event="submit",
            allowed=agent._run.allowed_events(),
            failed_guards=(describe_guard("submit_allowed"),),
        )


def open_for(agent: Agent, event: str, *, then: str | None = None) -> None:
    """Refuse a call that a paused or shut-down run does not take, saying what to do.

    Raises:
        IllegalTransitionError: The run is paused (the message says to call ``resume()``
            and then ``event``), or shut down (the message says a shut-down run is final).
            Nothing changes.
    """
    state = agent._data.state
    if state != _SHUTDOWN and state != _PAUSED:  # (most calls: neither)
        return
    if state == _SHUTDOWN:
        detail, allowed = SHUT_DOWN_IS_FINAL, tuple[str, ...]()
    else:
        detail = PAUSED_NEEDS_RESUME.format(then=f", then {event}()" if then is None else then)
        allowed = agent._run.allowed_events()
    raise IllegalTransitionError(
        run_id=agent.run_id,
        machine="run",
        state=str(agent.state),
        event=event,
        allowed=allowed,
        detail=detail,
    )


def adoptable(agent: Agent, store: object) -> None:
    """Check that a sub-agent factory's Agent can become a child run in ``store``.

    Raises:
        ValueError: The Agent was started or restored already, or has a store other than its
            parent's (a run tree lives in one store).
    """
    if agent.state != RunState.CREATED or agent._restored or agent.turn:
        raise ValueError(
            f"an agent tool's factory must return a new Agent, not one in state "
            f"{agent.state!r} (run {agent.run_id!r}); build a new one on each call"
        )
    if agent.store is not None and agent.store is not store:
        raise ValueError(
            "an agent tool's factory returned an Agent with a store of its own; leave "
            "store unset: a child run lives in its parent's store, so the whole tree "
            "reloads from the root's run id"
        )
