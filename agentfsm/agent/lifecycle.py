"""The calls that move a run through RunLifecycle: start, submit, resolve, cancel, pause….

Each public ``a``-method is a `step` (it ends at rest whatever escapes it, I12, and is
refused mid-step unless docs/contract.md gives it a meaning there, I13); the synchronous
facade (`agentfsm.agent._sync.SyncFacade`) gives each its name without the prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from agentfsm.agent import checks
from agentfsm.agent.context import ContextControl
from agentfsm.agent.leasing import take_up
from agentfsm.agent.settings import SettingsControl
from agentfsm.agent.steps import DRIVE, StepGuard, step
from agentfsm.agent.view import RunView
from agentfsm.agent.vocabulary import DecisionLike, TurnOutcome, to_decision
from agentfsm.errors import GuardFailedError, ModelSettingsError
from agentfsm.llm.settings import ModelSettings, SettingsLike
from agentfsm.states.json import JSONObject
from agentfsm.states.names import RecordKind, RunState
from agentfsm.tools.policy import Decision

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent


class Lifecycle(StepGuard, RunView, ContextControl, SettingsControl):
    """The Agent's lifecycle calls, each a step of the run (mixed into `Agent`)."""

    __slots__ = ()

    _system_prompt: str | None
    """The system prompt, recorded by ``start`` (its message is ``_system``)."""

    @step
    async def astart(
        self,
        text: str | None = None,
        *,
        settings: SettingsLike | None = None,
        deps: object = None,
    ) -> TurnOutcome:
        """Open the run: created → ready; with ``text``, also submit it, in the same step.

        For a run restored from its store, take it up where it was instead: nothing is
        re-entered, a busy turn goes on from its last stored step, and the run is claimed
        (a save with no event) so that of two processes resuming it, the second gets
        `SnapshotConflictError` before running anything. A restored paused run stays paused
        (resuming is always explicit): call `resume` next; any other call says so.

        ``astart(text)`` is ``astart()`` then ``asubmit(text)``: the same events in the
        same order, the same messages, trace, hooks and outcome; but with no return to the
        caller between them, so on a store the start (or the claim of a restored run) and
        the input are saved in one transaction, the awaited save before the first model
        call, and delivered once it committed (I11). A cancel or pause a listener of
        ``start`` asks for is taken at the turn's first step boundary. ``text`` is checked
        before anything happens: a bad one changes and stores nothing. On a restored run,
        ``text`` is taken only where ``astart()`` leaves the run ``ready``. ``settings``
        overrides the Agent's model settings for ``text``'s turn, and ``deps`` its
        dependencies, as for `asubmit`.

        Raises:
            IllegalTransitionError: The run is shut down (a shut-down run is final: start a
                new one), or it is paused and was not just restored (call `resume`), or it
                was already started; or ``text`` was given for a restored run that
                ``astart()`` would not leave ready (call ``astart()``, then what the run
                awaits). Nothing is written.
            GuardFailedError: ``text`` is empty or blank. Nothing is written.
            TypeError: ``text`` is not a str. Nothing is written.
            ModelSettingsError: ``settings`` out of range, or given without ``text``.
        """
        restored = self._restored
        if text is not None:
            checks.user_text("text", text)
        override = self._override(settings)
        if override is not None and text is None:
            raise ModelSettingsError(
                next(iter(override.model_fields_set)),
                "is a turn's setting: give it with the turn's text (start(text, settings=...))",
            )
        checks.startable(cast("Agent", self), restored)
        if text is not None:
            checks.first_input(cast("Agent", self), text, restored)
        if restored and self._data.state != RunState.CREATED:
            if self._data.state == RunState.BUSY:
                await take_up(
                    cast("Agent", self)
                )  # its lease: refused while live, a takeover recorded
            self._restored = False
            self._claim()
            if self.state == RunState.BUSY:
                return DRIVE
            if self._round and self._loop is not None and self._loop.is_final:
                # The process stopped between ending a turn and closing its round.
                self._close_turn(self._data.reason or "cancelled")
            return self.outcome() if text is None else await self._first_turn(text, override, deps)
        self._restored = False
        max_iterations, max_turns, input_policy = self._config
        parent = self._parent
        extra: JSONObject = {}
        if parent is not None:
            extra["parent_run"], extra["parent_call"] = parent
        if self._output_spec is not None:
            extra["output_retries"] = self._data.output_retries
        self._run.send(
            "start",
            max_iterations=max_iterations,
            max_turns=max_turns,
            input_policy=str(input_policy),
            system_prompt=self._system_prompt,
            **extra,
        )
        return self.outcome() if text is None else await self._first_turn(text, override, deps)

    async def _first_turn(
        self, text: str, settings: ModelSettings | None, deps: object = None
    ) -> TurnOutcome:
        """`astart`'s ``text``: submitted in the step that started the run (its turn driven).

        A cancel or pause asked for by a listener of ``start`` (told at once, without a
        store) is kept for the turn's first step boundary, where a listener told after the
        one save (with a store) asks for it too.
        """
        cancel, pause = self._cancel_requested, self._pause_requested
        await self._open_turn(text, from_queue=False, settings=settings, deps=deps)
        self._cancel_requested |= cancel
        self._pause_requested |= pause
        return DRIVE  # (the step drives the turn, as for `asubmit`)

    @step
    async def asubmit(
        self, text: str, *, settings: SettingsLike | None = None, deps: object = None
    ) -> TurnOutcome:
        """Give the run a user input and run the turn until it ends or waits.

        While busy, the input follows the run's input policy (`IllegalTransitionError`
        under ``reject``). An empty input, or one past the turn limit, raises
        `GuardFailedError` and changes nothing.

        ``settings`` (`ModelSettings`, or a mapping of its fields) overrides the Agent's
        model settings for this turn's calls only, merged over them field by field; it is
        recorded in the ``submit`` event. An input submitted while busy takes none.
        ``deps`` are this turn's dependencies for tools and hooks, instead of the Agent's
        (never stored: a run restored mid-turn has the Agent's).

        Raises:
            ModelSettingsError: ``settings`` out of range, naming no offered tool, for a
                model that takes none, or given with an input that arrives while busy.
                Nothing changes.
        """
        checks.user_text("text", text)
        override = self._override(settings)
        checks.open_for(cast("Agent", self), "submit")
        if self._data.deadline is not None:  # (only a wait with a deadline can be overdue)
            await self._expire_if_due()
        if self._data.state == _BUSY:
            if deps is not None:
                raise ValueError(
                    "deps=... is a turn's, and this input arrives while the run is busy (it "
                    "would be queued or interrupt); submit it with its deps once the turn ended"
                )
            if override is not None:
                raise ModelSettingsError(
                    next(iter(override.model_fields_set)),
                    "is a turn's setting, and this input arrives while the run is busy (it "
                    "would be queued or interrupt); submit it with its settings once the "
                    "turn ended",
                )
            self._run.send("submit", text=text)  # queued or interrupting, or refused
            return self.outcome()
        await self._open_turn(text, from_queue=False, settings=override, deps=deps)
        return DRIVE  # (the step drives the turn: this frame is gone meanwhile)

    @step
    async def aresolve_action(self, decisions: Mapping[str, DecisionLike]) -> TurnOutcome:
        """Decide every pending call: approve it, deny it, or supply a client-side output."""
        checks.decisions(cast("Agent", self), decisions)
        checks.open_for(cast("Agent", self), "resolve_action")
        await self._expire_if_due()
        decided = {call_id: to_decision(call_id, value) for call_id, value in decisions.items()}
        payload: JSONObject = {
            call_id: decision.model_dump(mode="json") for call_id, decision in decided.items()
        }
        self._run.send("resolve_action", decisions=payload)
        self._decisions = {**self._decisions, **decided}  # (a round waiting on a child again)
        self._loop_machine().send("resolved", decisions=payload)
        return DRIVE

    @step
    async def aprovide_input(self, text: str) -> TurnOutcome:
        """Answer the pending question; the answer becomes the ``ask_user`` tool message."""
        checks.user_text("text", text)
        checks.open_for(cast("Agent", self), "provide_input")
        await self._expire_if_due()
        pending = self._data.pending
        self._run.send("provide_input", text=text)
        await self._user_input(text, defer=True)
        answers = {call_id: Decision.output(text) for call_id in pending}
        payload: JSONObject = {
            call_id: decision.model_dump(mode="json") for call_id, decision in answers.items()
        }
        if any(call_id in self._inputs for call_id in pending):
            # A tool asked: its call is retried with the answer; the round's decisions stay.
            self._inputs = {
                call_id: {**request, "answer": text} if call_id in pending else request
                for call_id, request in self._inputs.items()
            }
        else:
            self._decisions = {**self._decisions, **answers}  # (a round waiting on a child)
        self._loop_machine().send("resolved", decisions=payload)
        return DRIVE

    @step
    async def acancel(self) -> TurnOutcome:
        """Cancel the turn: at once while it waits, at the next step boundary while busy.

        Asked for while a step runs (from a hook, listener or tool, or another task), it
        takes effect at the step's next boundary; once the turn's outcome is decided it is
        refused with `ReentrantCallError`. A run left busy with no step running (restored
        from its store mid-turn) is cancelled at once.
        """
        busy = self._data.state == RunState.BUSY
        if self._depth > 1:
            self._refuse_late_cancel()
            if busy or self._run.can_send("cancel"):
                self._cancel_requested = True
                if self._active_child is not None:  # cancel propagates down
                    await self._active_child.acancel()
                return self.outcome()
        elif busy:  # no step is running: answer what it left open, then cancel
            if self._restored:
                await take_up(
                    cast("Agent", self)
                )  # its lease: refused while live, a takeover recorded
            self._close_turn("cancelled")
            self._data.at_boundary = True
        self._run.send("cancel")
        self._close_turn("cancelled")
        return self.outcome()

    @step
    async def apause(self) -> TurnOutcome:
        """Pause the run: at once when idle or waiting, at the next step boundary while busy.

        Asked for while a step runs, it takes effect at the step's next boundary, or, if the
        turn ends in that step, on the state it ended in (a paused completed run). A run left
        busy with no step running (restored from its store mid-turn) is paused at once.

        Raises:
            GuardFailedError: A run restored busy while a call of its, or of a child run
                below it, was running cannot pause: nothing is paused (a takeover of its
                lease stays recorded), and `start` goes on with the turn.
        """
        busy = self._data.state == RunState.BUSY
        if self._depth > 1 and (busy or self._run.can_send("pause")):
            self._pause_requested = True
            if self._active_child is not None:  # pause propagates down
                await self._active_child.apause()
            return self.outcome()
        if busy:  # no step is running; unless a call may still be (a crash mid-call)
            self._data.at_boundary = not self._started
            if self._restored and self._data.at_boundary:  # (else the pause is refused)
                await take_up(
                    cast("Agent", self)
                )  # its lease: refused while live, a takeover recorded
            if self._agent_tools:  # a child it left busy pauses with it (I14)
                try:
                    await self._pause_stranded_child()
                except GuardFailedError:
                    # Refused (a call of a run below was running when its process stopped):
                    # the run stays the busy one taken over, its takeover stored, for
                    # `start` to go on (see agentfsm.agent.steps, `_settled`).
                    await self._commit()
                    raise
        self._run.send("pause")
        return self.outcome()

    @step
    async def aresume(self) -> TurnOutcome:
        """Return to the state the run was paused in; a busy turn goes on where it stopped."""
        if self.state == RunState.SHUTDOWN:
            checks.open_for(cast("Agent", self), "resume")
        self._pause_requested = False  # (a pause asked by a listener of resume is kept)
        self._run.send("resume")
        self._restored = False
        return DRIVE if self.state == RunState.BUSY else self.outcome()

    @step
    async def aexpire(self) -> TurnOutcome:
        """Expire the current wait if its deadline has passed (else `GuardFailedError`)."""
        self._expire(self._clock())
        return self.outcome()

    @step
    async def ashutdown(self) -> TurnOutcome:
        """Close the run for good. Not while busy.

        An unfinished turn (waiting, or paused mid-turn) is closed as for cancel.
        """
        unfinished = self._loop is not None and not self._loop.is_final
        self._run.send("shutdown")
        if unfinished:
            self._close_turn("cancelled")
        for source in self._sources:  # the sessions this Agent owns (an MCP server's)
            release = getattr(source, "release", None)
            if release is not None:
                await release()
        return self.outcome()

    def reset(self) -> None:
        """Clear the conversation (the system prompt stays) while the run is at rest.

        Raises:
            ReentrantCallError: Called while a step of the run is running.
            IllegalTransitionError: The run is not ready, completed or failed.
        """
        self._at_rest("reset")
        self._messages = self._system
        self._round, self._deferred = (), ()
        self._store_failed = False
        self._depth = 1  # its listeners run inside this step
        try:
            self._note(RecordKind.RESET, {"keep": len(self._system)})
        except BaseException:
            if self._store_failed:  # the store refused: the run is what it holds
                self._reload()
            raise  # (a listener's exception: the reset is made and saved)
        finally:
            self._depth = 0
        self._apply_requests()  # a pause asked for by a listener of the reset


_BUSY = RunState.BUSY
