"""Sub-agents: an agent used as a tool of another, each call a child run of its own.

`agent_tool` makes an `Agent` (built by a factory) a tool. A call to it is admitted like any
call (enabled, registered, permitted, arguments valid: I9), then, instead of a body, the
parent's loop goes ``acting → delegating`` (``delegated``) and a *child run* works on the
call's task: its own run id (`child_run_id`), its own log in the parent's store, its first
event pointing at the parent run and call. The child's steps are the parent's external
effects: the parent's batch is stored before each one.

How the child comes to rest decides what the parent does (docs/contract.md §2 and §5):

- an answer, or a failure of any kind: ``child_returned`` (back to ``acting``); the answer
  (or a `SubAgentError`) is the call's tool result, recorded once;
- a wait: ``child_asked`` (to ``awaiting_action`` / ``awaiting_input``), and the parent's run
  waits too, on the same calls *addressed by a path*: ``parent run/parent call/child run/
  child call``, one pair per level, any depth. `resolve_action` / `provide_input` on the
  parent with those addresses resume the round, which takes the child up again, innermost
  first;
- a pause: the parent pauses with it, and its `resume` takes the child up again.

Everything is in the store: the whole tree reloads from the root's run id (each child from
the id its parent derives), and a child already at rest is never run again.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING

from agentfsm import _checks
from agentfsm.agent.turn import TurnDriver
from agentfsm.errors import (
    GuardFailedError,
    StoreError,
    SubAgentDepthError,
    SubAgentError,
    ToolDefinitionError,
)
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.states.names import LoopState, RunState
from agentfsm.tools.execution import Attempted
from agentfsm.tools.policy import Decision, ToolPolicy
from agentfsm.tools.registry import ToolRegistry
from agentfsm.tools.spec import PolicyName, Tool
from agentfsm.tools.system import Delegate

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent

__all__ = ["DEFAULT_MAX_DEPTH", "AgentTool", "agent_tool", "child_run_id"]

_WAITS = (RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED)

DEFAULT_MAX_DEPTH = 8
"""How deep an agent tool's child runs may nest by default (the top run is depth 0)."""


class AgentTool(Tool[..., Awaitable[str]]):
    """A tool whose calls are runs of a sub-agent (build one with `agent_tool`).

    Its one argument is ``task``, the words the child run is submitted. Called directly
    (not through an Agent's round) it raises `ToolDefinitionError`.
    """

    __slots__ = ("factory", "max_depth")

    def __init__(
        self,
        factory: Callable[[], Agent],
        *,
        name: str,
        description: str,
        policy: ToolPolicy | PolicyName = ToolPolicy.ALLOW,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        if not callable(factory):
            raise TypeError(
                "factory must be a callable that returns a new Agent (lambda: Agent(...)), "
                f"not {_checks.given(factory)}"
            )
        _checks.whole("max_depth", max_depth, minimum=1)
        tool_name = name

        async def sub_agent(task: str) -> str:
            """Ask the sub-agent.

            Args:
                task: What the sub-agent is to do, in words.
            """
            raise ToolDefinitionError(
                tool_name, "an agent tool runs only in an Agent's round (as a child run)"
            )

        super().__init__(sub_agent, name=name, description=description, policy=policy)
        self.factory = factory
        """Builds the sub-agent: a new `Agent` for each call (the parent gives it its run id
        and its store)."""
        self.max_depth = max_depth
        """The deepest a child run of this tool may be (the top run is depth 0): a call
        whose child would be deeper is refused with `SubAgentDepthError`."""


def agent_tool(
    factory: Callable[[], Agent],
    *,
    name: str,
    description: str,
    policy: ToolPolicy | PolicyName = ToolPolicy.ALLOW,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> AgentTool:
    """An agent usable as a tool of another: each call runs a new child run of ``factory()``.

    Args:
        factory: Returns a new, unstarted `Agent` (its model, tools, prompt…). The parent
            gives it its run id (`child_run_id`) and the parent's store, so it must not have
            a store of its own other than the parent's.
        name: The name the parent's model calls it by.
        description: What it does, for the parent's model.
        policy: Whether its calls run freely or need the application's approval first.
        max_depth: The deepest its child runs may nest, counting from the top run of the
            tree (depth 0) as taken up in this process (default 8). A call whose child would
            be deeper starts nothing: its result is a `SubAgentDepthError` naming both
            depths, which the calling run's model reads (so a sub-agent that has itself
            among its tools stops there).

    Returns:
        The tool, to put among the parent's tools.

    Raises:
        TypeError: ``factory`` is not callable, or ``max_depth`` is not an int.
        ValueError: ``max_depth`` is below 1.
        InvalidToolNameError: ``name`` is not a name the model API accepts.

    Example:
        >>> from agentfsm import Agent
        >>> helper = agent_tool(lambda: Agent("scripted:demo"), name="helper",
        ...                     description="Answers anything.")
        >>> helper.parameters["required"] == ["task"]
        True
    """
    return AgentTool(
        factory, name=name, description=description, policy=policy, max_depth=max_depth
    )


def child_run_id(parent_run_id: str, turn: int, iteration: int, call_id: str) -> str:
    """The run id of the child run a parent's call starts: the same on every resume.

    Example:
        >>> child_run_id("root", 1, 2, "call_7")
        'root.1.2.call_7'
    """
    return f"{parent_run_id}.{turn}.{iteration}.{call_id}"


def _weak_delegate(runs: ChildRuns) -> Delegate:
    ref = weakref.ref(runs)

    async def delegate(call: ToolCall, arguments: dict[str, object]) -> Attempted | None:
        alive = ref()
        return None if alive is None else await alive._delegate(call, arguments)

    return delegate


_NO_AGENT_TOOLS: Mapping[str, AgentTool] = MappingProxyType({})
"""The sub-agent tools of a run that has none: shared, immutable."""
_NO_CHILDREN: Mapping[str, Agent] = MappingProxyType({})
"""The child runs of a run that has none taken up: shared, immutable."""


class ChildRuns(TurnDriver):
    """What an Agent does for its calls to sub-agents: the child runs, their waits and ends."""

    __slots__ = ("_active_child", "_agent_tools", "_children", "_nesting", "_orphans", "_parent")

    _agent_tools: Mapping[str, AgentTool]
    """The sub-agent tools among the registered ones, by name."""
    _children: Mapping[str, Agent]
    """The child runs taken up in this process, by run id, until they return (replaced,
    never changed in place: a run with no child shares `_NO_CHILDREN`)."""
    _active_child: Agent | None
    """The child run whose step is running inside this run's step, if any."""
    _orphans: tuple[Agent, ...]
    """Children whose parent's turn was closed while they were at rest in a wait or a pause:
    closed too at the end of the step."""
    _parent: tuple[str, str] | None
    """This run's parent run and the parent's call id, for a child run."""
    _nesting: int
    """This run's depth in its tree as taken up in this process (0: the top run)."""

    def _init_children(self, registry: ToolRegistry) -> None:
        found = registry._of_kind(AgentTool)  # (the same for every registry alike)
        agents = {tool.name: tool for tool in found} if found else None
        # Most runs have no sub-agent tool: they share empty, immutable containers.
        self._agent_tools = agents or _NO_AGENT_TOOLS
        self._delegates = None
        if agents:
            delegate = _weak_delegate(self)  # (no cycle: an Agent nobody holds is freed)
            self._delegates = dict.fromkeys(agents, delegate)
        self._children = _NO_CHILDREN
        self._active_child = None
        self._orphans = ()
        self._parent = None
        self._nesting = 0

    def _forget_child(self, run_id: str) -> None:
        if run_id in self._children:
            self._children = {key: child for key, child in self._children.items() if key != run_id}

    # -- taking a child up ------------------------------------------------------------------

    def _child(self, tool: AgentTool, call_id: str) -> Agent:
        """The child run of ``call_id``: taken up already, or from the store, or new."""
        data = self._data
        run_id = child_run_id(data.run_id, data.turn, data.iteration, call_id)
        child = self._children.get(run_id)
        if child is None:
            child = tool.factory()
            if not isinstance(child, ChildRuns):
                raise TypeError(
                    f"the factory of agent tool {tool.name!r} must return a new Agent, not "
                    f"{_checks.given(child)}"
                )
            child._adopt(run_id, self.store, (data.run_id, call_id))
            child._nesting = self._nesting + 1
            if child._deps is None:  # the parent's dependencies, unless the factory gave own
                child._deps = child._call_deps = self._call_deps
            self._children = {**self._children, run_id: child}
        return child

    def _adopt(self, run_id: str, store: object, parent: tuple[str, str]) -> None:
        raise NotImplementedError  # the Agent's (it owns the emitter and the restore)

    async def _delegate(self, call: ToolCall, arguments: dict[str, object]) -> Attempted | None:
        """Run (or take up again) the child run of ``call``; None while it is not at its end."""
        loop = self._loop_machine()
        tool = self._agent_tools[call.name]
        if loop.state == LoopState.ACTING and self._nesting >= tool.max_depth:
            # Refused before anything starts, as a call its policy denies: no child run.
            depth = self._nesting + 1
            return Attempted(
                None, SubAgentDepthError(call.name, call.id, depth, tool.max_depth), 0
            )
        data = self._data
        run_id = child_run_id(data.run_id, data.turn, data.iteration, call.id)
        # Nothing of this run is in flight while its child works: the child has its own
        # boundaries (and the log says the same, so replay agrees, I10).
        data.at_boundary = True
        if loop.state == LoopState.ACTING:  # (not a run restored while its child worked)
            loop.send("delegated", call_id=call.id, child=run_id)
        await self._commit()  # the child's steps are this run's external effects
        try:
            child = self._active_child = self._child(tool, call.id)
            await self._advance(child, call.id, str(arguments.get("task", "")))
        except StoreError:
            # Not the child's failure: the store refused (another process moved the tree on,
            # or it is down). Nothing is recorded; this run becomes what the store holds
            # (I12) and the caller gets the error (I14).
            self._forget_child(run_id)
            self._store_failed = True
            raise
        except Exception as error:  # the child is at rest (I12); its failure is the call's
            self._forget_child(run_id)
            loop.send("child_returned")
            failure = SubAgentError(call.name, call.id, run_id, type(error).__name__, str(error))
            return Attempted(None, failure, 1)
        finally:
            self._active_child = None
        return self._returned(child, call)

    async def _advance(self, child: Agent, call_id: str, task: str) -> None:
        """Move the child on from where it is: start it, or take up its wait or pause."""
        if child._restored:
            busy = child.state == RunState.BUSY
            await child.astart()  # a stored busy child goes on from its last stored step
            if busy:  # (to rest: what it rests in, a pause asked of it too, is the call's)
                return
        state = child.state
        if state == RunState.CREATED:  # started with its task in one step (one save, on a store)
            await child.astart(task)
        elif state == RunState.READY:
            await child.asubmit(task)
        elif state == RunState.PAUSED:
            await child.aresume()
        elif state in _WAITS:
            decisions = self._decisions_for(child, call_id)
            if not decisions:
                return  # (a wait not answered yet: it stays the parent's wait)
            if state == RunState.REQUIRES_ACTION:
                await child.aresolve_action(decisions)
            else:
                await child.aprovide_input(str(next(iter(decisions.values())).value))

    def _returned(self, child: Agent, call: ToolCall) -> Attempted | None:
        """The call's result from the child at rest, or None when the parent waits with it."""
        state = child.state
        loop = self._loop_machine()
        if state in _WAITS:
            addressed: list[JSONValue] = [p.id for p in self._addressed(child, call.id)]
            action = state == RunState.REQUIRES_ACTION
            loop.send(
                "child_asked",
                needing_action=len(addressed) if action else 0,
                asking_user=0 if action else len(addressed),
            )
            if action:
                self._run.send("need_action", calls=addressed, deadline=self._deadline(True))
            else:
                self._run.send(
                    "need_input",
                    question=child.question,
                    calls=addressed,
                    deadline=self._deadline(False),
                )
            return None
        if state == RunState.PAUSED:
            self._pause_requested = True  # the child stopped at a boundary: so does its parent
            return None
        self._forget_child(child.run_id)
        loop.send("child_returned")
        outcome = child.outcome()
        if state == RunState.COMPLETED:
            return Attempted(outcome.reply, None, 1)
        detail = (
            f"{outcome.error.type}: {outcome.error.message}"
            if outcome.error is not None
            else f"its turn ended {state!r}"
        )
        reason = str(outcome.reason or state)
        return Attempted(None, SubAgentError(call.name, call.id, child.run_id, reason, detail), 1)

    # -- addresses ----------------------------------------------------------------------------

    def _addressed(self, child: Agent, call_id: str) -> tuple[ToolCall, ...]:
        """The child's pending calls, each with its path from this run as its id."""
        prefix = f"{self._data.run_id}/{call_id}/"
        own = {call.id for call in child._round}
        return tuple(
            pending.model_copy(
                update={
                    "id": prefix
                    + (f"{child.run_id}/{pending.id}" if pending.id in own else pending.id)
                }
            )
            for pending in child.pending
        )

    def _decisions_for(self, child: Agent, call_id: str) -> dict[str, Decision]:
        """This run's decisions for the child's pending calls, by the child's own ids."""
        decided = self._decisions
        local: dict[str, Decision] = {}
        for pending, addressed in zip(child.pending, self._addressed(child, call_id), strict=True):
            if addressed.id in decided:
                local[pending.id] = decided[addressed.id]
        return local if len(local) == len(child.pending) else {}

    def _nested_pending(self) -> tuple[ToolCall, ...]:
        """The pending calls of the child this run waits on, addressed by their paths."""
        pending = self._data.pending
        for call in self._round:
            tool = self._agent_tools.get(call.name)
            prefix = f"{self._data.run_id}/{call.id}/"
            if tool is not None and any(p.startswith(prefix) for p in pending):
                return self._addressed(self._child(tool, call.id), call.id)
        return ()

    # -- closing ------------------------------------------------------------------------------

    def _open_child(self) -> Agent | None:
        """The child run of the open round's unanswered sub-agent call, if it exists."""
        answered = {result.call_id for result, _ in self._answers}
        data = self._data
        for call in self._round:
            tool = self._agent_tools.get(call.name)
            if tool is None or call.id in answered:
                continue
            run_id = child_run_id(data.run_id, data.turn, data.iteration, call.id)
            exists = run_id in self._children or (
                self.store is not None and self.store.load(run_id) is not None
            )
            return self._child(tool, call.id) if exists else None
        return None

    async def _pause_stranded_child(self) -> None:
        """Before a busy run with no step running pauses: pause the child it left busy.

        A run taken up from its store mid-round (its process stopped while its child worked)
        may find its child busy in the store too; paused alone, it would be at rest while its
        child is busy (I14). Its `resume` takes the child up again.

        Raises:
            GuardFailedError: The child cannot pause (a call of its was running when its
                process stopped); nothing is paused.
            StoreError: The store refused the child's save (`_refused_by_store`).
        """
        if self._round and self._loop_machine().state == LoopState.DELEGATING:
            with self._refused_by_store():
                child = self._open_child()
                if child is not None and child.state == RunState.BUSY:
                    await child.apause()

    async def _stop_stranded_child(self) -> bool:
        """Before a run taken up mid-round takes a cancel or pause: its busy child first.

        A run taken up from its store while its child was busy (its process stopped while
        the child worked) cancels or pauses that child before it comes to rest itself, so
        that it is never stored at rest over a busy child (I14).

        Returns:
            Whether the request may be taken now. Not if the child cannot pause (a call of
            its, or of a run below it, was running when its process stopped): the pause is
            asked of the child too, and this run's call takes the child up next, before any
            boundary; the child pauses at its own next boundary, and this run with it.

        Raises:
            StoreError: The store refused the child's save (`_refused_by_store`).
        """
        if not self._round or self._loop_machine().state != LoopState.DELEGATING:
            return True
        with self._refused_by_store():
            child = self._open_child()
            if child is None or child.state != RunState.BUSY or child is self._active_child:
                return True
            if self._cancel_requested or self._data.cancel_requested:
                child._pause_requested = False  # (one asked of it before: the cancel wins)
                await child.acancel()
                return True
            if child._pause_requested:  # asked of it already: it cannot pause before its call
                return False
            try:
                await child.apause()
            except GuardFailedError:
                child._pause_requested = True  # taken at its next boundary, taken up (I14)
                return False
        return True

    @contextmanager
    def _refused_by_store(self) -> Iterator[None]:
        """Around bringing a stranded child to rest: a `StoreError` is no failure of this run.

        As for a child its call takes up (`_delegate`, docs/contract.md §2): the child is what
        the store holds (its own step saw to it), and so is this run, not failed over its busy
        child (I12, I14; simulation seed 441); the error reaches the caller.
        """
        try:
            yield
        except StoreError:
            self._children = _NO_CHILDREN  # (taken up again from the store)
            self._store_failed = True
            raise

    def _close_turn(self, why: str) -> None:
        """Close the turn; a child left waiting or paused in it is closed at the step's end."""
        child = self._open_child() if self._agent_tools and self._round else None
        super()._close_turn(why)
        if child is not None and child is not self._active_child:
            self._orphans = (*self._orphans, child)

    async def _close_orphans_after(self, error: Exception) -> None:
        """`_close_orphans` for a step that failed with ``error`` (raised next, unchanged)."""
        try:
            await self._close_orphans()
        except Exception as later:
            note = getattr(error, "add_note", None)  # Python 3.11+
            if note is not None:
                note(f"a child run could not be closed after it: {later!r}")

    async def _close_orphans(self) -> None:
        """Cancel (or, paused, shut down) the children whose parent's turn was closed."""
        while self._orphans:
            child, self._orphans = self._orphans[-1], self._orphans[:-1]
            self._forget_child(child.run_id)
            if child.state == RunState.PAUSED:
                await child.ashutdown()
            elif child.state in (*_WAITS, RunState.BUSY):
                await child.acancel()
