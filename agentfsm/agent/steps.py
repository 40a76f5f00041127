"""Every call into the Agent ends at rest (I12); calls from inside a step keep the contract (I13).

`step` wraps each public ``a``-method. A call made while another is running (from a hook, a
listener or a tool of the same run, or from another task) may only do what docs/contract.md gives
a meaning to mid-step: `submit` while busy follows the input policy; `cancel` and `pause` are
requests taken at the next step boundary. Anything else raises `ReentrantCallError` and
changes nothing.

Whatever escapes the outermost call (any exception, `KeyboardInterrupt`, `SystemExit`, the
cancellation of the awaiting task) is settled before it propagates: a turn left busy fails
(reason ``error``, or ``cancelled`` for a cancellation) with every open call answered, or, if
the store refused a save, the run becomes what the store holds.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from agentfsm.agent import leasing
from agentfsm.agent.children import ChildRuns
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.errors import GuardFailedError, ReentrantCallError
from agentfsm.states.names import FailedReason, RunState
from agentfsm.stores.leases import Hold
from agentfsm.tools.results import ErrorDetails

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent

P = ParamSpec("P")
S = TypeVar("S", bound="StepGuard")

HOLDING = frozenset({RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED, RunState.PAUSED})
"""The states at rest in which a round may stay open (a wait, or a pause in one or mid-round)."""

MID_STEP_CALLS = frozenset({"cancel", "pause", "submit"})
"""The calls allowed while a step runs (`submit` only while the run is busy)."""

DRIVE = TurnOutcome(RunState.BUSY, None, None, (), None)
"""What a step method returns to have the step drive its turn on (`TurnDriver._drive`) and
then return the outcome: the method's own coroutine is then finished while the turn runs,
so a run waiting on its model holds one frame fewer. Never returned to a caller."""


def step(
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, TurnOutcome]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, TurnOutcome]]:
    """Make ``method`` a call that ends at rest whatever escapes it (I12).

    Called from inside a step of the run, it is refused unless docs/contract.md gives it a
    meaning there (I13). ``method`` may be a mixin's (``S``): it is always an `Agent`'s.
    """
    name = method.__name__.removeprefix("a")
    run = cast("Callable[Concatenate[Agent, P], Coroutine[Any, Any, TurnOutcome]]", method)

    @functools.wraps(method)
    async def wrapper(self: Agent, /, *args: P.args, **kwargs: P.kwargs) -> TurnOutcome:
        # The method's coroutine takes its arguments now (it runs nothing yet): the tuple
        # and dict of them are freed, not kept in this frame while the run drives its turn
        # (112 bytes for a waiting `asubmit`). Bad arguments raise here, having changed nothing.
        call = run(self, *args, **kwargs)
        del args, kwargs
        if self._depth:
            return await _nested(self, name, call)
        if self._unsure:  # a failed save's outcome is unknown: read the store first
            _reread(self, call)
        held = _hold(self, call)  # the run's lease, for the step's saves
        self._depth = 1
        self._store_failed = self._driven = False
        self._group()  # group commit (agentfsm.agent.record)
        seq = self._emitter.seq
        try:
            outcome = await call
            del call  # (finished: its frame is freed while the turn is driven)
            if outcome is DRIVE:
                await self._drive()
                outcome = self.outcome()
            if self._orphans:  # children of a turn this step closed (cancel, expire…)
                await self._close_orphans()
            if self._due():  # the return to the caller: all is stored and told
                await self._commit()
            else:  # (what `_commit` does with nothing due, without a coroutine)
                self._behind = self._pipelined
            if self._apply_requests():
                await self._commit()
                outcome = self.outcome()
        except BaseException as error:
            await _settled(self, error, seq)
            raise
        finally:
            self._grouping = False
            self._depth = 0
            leasing.release(self, held)
        return outcome

    return cast("Callable[Concatenate[S, P], Coroutine[Any, Any, TurnOutcome]]", wrapper)


async def _settled(agent: Agent, error: BaseException, seq: int) -> None:
    """Bring the run to rest after ``error`` escaped the step begun at ``seq``."""
    # A call refused before it moved anything (I4) leaves the run as it was; so does a
    # pause of a restored busy run that its busy child refused after the run's takeover
    # was stored (the run is still the one to take up: failing it would leave that child
    # busy under a failed parent, I14).
    moved = agent._driven or agent._emitter.seq != seq or agent._due()
    if moved and not _refused_taken_over(agent, error):
        agent._settle(error)
    if agent._orphans and isinstance(error, Exception):
        await agent._close_orphans_after(error)


def _refused_taken_over(agent: Agent, error: BaseException) -> bool:
    """Whether ``error`` refused a call on a restored busy run whose takeover alone is stored."""
    return (
        isinstance(error, GuardFailedError)
        and agent._restored
        and agent._data.state == RunState.BUSY
        and not agent._due()
    )


def _reread(agent: Agent, call: Coroutine[Any, Any, TurnOutcome]) -> None:
    """Take up what the store holds before ``call`` (see agentfsm.agent.rollback).

    Raises:
        StoreError: The store still cannot be read: ``call`` is not made, nothing changed.
    """
    try:
        agent._recheck()
    except BaseException:
        call.close()  # never started: not left to warn that it was never awaited
        raise


def _hold(agent: Agent, call: Coroutine[Any, Any, TurnOutcome]) -> Hold | None:
    """`leasing.hold`, as a step begins: refused, the call is closed, never started."""
    if agent._lease is None:
        return None
    try:
        return leasing.hold(agent)
    except BaseException:
        call.close()
        raise


async def _nested(agent: Agent, name: str, call: Coroutine[Any, Any, TurnOutcome]) -> TurnOutcome:
    """A call made from inside a step: refused unless the contract allows it there (I13)."""
    try:
        agent._check_mid_step(name)
    except BaseException:
        call.close()  # never started: not left to warn that it was never awaited
        raise
    agent._depth += 1
    try:
        outcome = await call
        return await _driven_on(agent) if outcome is DRIVE else outcome
    finally:
        agent._depth -= 1


async def _driven_on(agent: Agent) -> TurnOutcome:
    """For a call from inside a step that drives (none the contract allows does): drive."""
    await agent._drive()
    return agent.outcome()


class StepGuard(ChildRuns):
    """Settles what escapes a step, and refuses calls that would break the contract mid-step."""

    __slots__ = ()

    def _check_mid_step(self, name: str) -> None:
        """Refuse ``name`` while a step runs, unless the contract gives it a meaning there."""
        state = self._data.state
        if name in MID_STEP_CALLS and (name != "submit" or state == RunState.BUSY):
            return
        raise ReentrantCallError(self._data.run_id, name, state)

    def _refuse_late_cancel(self) -> None:
        """A cancel asked for once the turn's outcome is decided (its loop has ended)."""
        if self._data.state == RunState.BUSY and self._loop is not None and self._loop.is_final:
            raise ReentrantCallError(
                self._data.run_id,
                "cancel",
                self._data.state,
                f" (the turn already ended {self._loop.state!r} and is being completed; "
                "there is nothing left to cancel)",
            )

    def _settle(self, error: BaseException) -> None:
        """Bring the run to rest after ``error`` escaped a step; the caller re-raises it."""
        self._cancel_requested = self._pause_requested = False
        quiet: list[BaseException] = []
        self._quiet = quiet
        try:
            if not self._store_failed:
                # What the step changed before it failed (its last batch): stored, then told.
                self._flush_now()
            finish = None if self._store_failed else self._finishing(error)
            if finish is not None:
                finish()
        except BaseException:
            if not self._save_refused():
                raise
        finally:
            self._quiet = None
        if self._store_failed:
            self._from_store()
        for later in quiet:
            if not isinstance(later, Exception):
                raise later from error  # never swallowed; the run is at rest first
            note = getattr(error, "add_note", None)  # Python 3.11+
            if note is not None:
                note(f"a listener also raised while the turn was being failed: {later!r}")

    def _finishing(self, error: BaseException) -> Callable[[], None] | None:
        """What brings the run to rest after ``error``; None if it is at rest already."""
        state = self._data.state
        if state == RunState.BUSY:
            return functools.partial(self._end_turn, error)
        if (self._round or self._deferred) and state not in HOLDING:
            # The run's transition was made (cancel, expire, shutdown…), but what escaped
            # cut short the closing of the turn: finish it.
            return functools.partial(self._close_turn, self._closing_reason())
        return None  # at rest already: what escaped came after the step's last change

    def _closing_reason(self) -> str:
        reason = self._data.reason
        return (
            str(reason)
            if reason in (FailedReason.CANCELLED, FailedReason.EXPIRED)
            else (FailedReason.CANCELLED.value)
        )

    def _end_turn(self, error: BaseException) -> None:
        cancelled = isinstance(error, asyncio.CancelledError)
        self._data.at_boundary = True  # nothing runs any more
        self._close_turn("cancelled" if cancelled else "failed")
        if cancelled:
            self._run.send("cancel")
        else:
            self._error = ErrorDetails.of(error)
            self._run.send("fail", **self._error.event_data())

    def _save_refused(self) -> bool:
        return self._store_failed

    def _from_store(self) -> None:
        """The store refused a save: the run is what it holds (a busy one goes on at start).

        The children the step's turn closing left to close (`_orphans`) are let be: that
        closing was not stored, and the store's run may still wait on them (I12, I14).
        """
        self._orphans = ()
        self._reload()
        self._restored = self._data.state == RunState.BUSY
