"""A turn's tool rounds, and the stops that cut a turn short.

`ToolRounds` runs the open round's calls through the `ToolSystem` (one at a time, each
start and answer recorded as it happens), closes the round, and stops a turn at a step
boundary (cancel, pause, expiry), answering the calls it leaves unanswered (I7). It sits
between `TypedAnswers` and `TurnDriver`, which drives the turn and calls it for each round.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from agentfsm.agent.record import NO_DECISIONS, NO_INPUTS
from agentfsm.agent.typed import TypedAnswers
from agentfsm.errors import AgentFSMError
from agentfsm.fsm import AnyMachine
from agentfsm.fsm.rounds import round_messages
from agentfsm.fsm.trace import ToolExecutionTrace, packed_tool_entries
from agentfsm.states.content import ContentPart
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall, message_json
from agentfsm.states.names import LoopState, RecordKind, RunState
from agentfsm.tools.context import call_key, context_of
from agentfsm.tools.policy import Decision
from agentfsm.tools.results import (
    RoundResult,
    ToolErrorInfo,
    ToolResult,
    ToolStatus,
    failure_content,
    result_json,
)
from agentfsm.tools.sources import InputRequest
from agentfsm.tools.system import Delegate

OUTCOME_UNKNOWN = "ToolOutcomeUnknown"
"""The error type of the tool message a resumed run gives a non-idempotent call that had
started before a crash without its result being stored (at-most-once, I11)."""


# The members the hot path compares with or records, read once (a member read costs a lookup
# in Python 3.11).
_EXHAUSTED, _DELEGATING = LoopState.EXHAUSTED, LoopState.DELEGATING
_TOOL_STARTED, _TOOL_RESULT = RecordKind.TOOL_STARTED, RecordKind.TOOL_RESULT
_ROUND_CLOSED = RecordKind.ROUND_CLOSED


class ToolRounds(TypedAnswers):
    """The open round's calls, their records, and the stops at a turn's step boundaries."""

    __slots__ = (
        "_asking",
        "_clock",
        "_delegates",
        "action_timeout",
        "enabled_tools",
        "input_timeout",
        "user_id",
    )

    enabled_tools: frozenset[str] | None
    user_id: str | None
    _call_deps: object  # (`TurnDriver`'s slot: the turn's dependencies)
    action_timeout: float | None
    input_timeout: float | None
    _clock: Callable[[], float]
    _asking: tuple[ToolCall, InputRequest] | None
    """The call of the running round whose tool asked the user, and what it asked."""
    _delegates: Mapping[str, Delegate] | None
    """The sub-agent tools' delegates, by tool name (`agentfsm.agent.children`); None when
    the run has no sub-agent tool."""

    if TYPE_CHECKING:  # (`TurnDriver`'s, which a round calls back)

        async def _finish(self, loop_state: str | None) -> None: ...

        async def _relist_changed(self) -> None: ...

        async def _stop_stranded_child(self) -> bool: ...

    def _loop_machine(self) -> AnyMachine:
        if self._loop is None:  # resolve_action etc. before any turn: the run refuses first
            raise AgentFSMError("no turn is running")
        return self._loop

    def _stop_at_boundary(self) -> bool:
        """At a step boundary of a busy turn: take a cancel or a pause asked for meanwhile."""
        if self._cancel_requested or self._data.cancel_requested:
            self._cancel_requested = False
            self._data.at_boundary = True
            self._run.send("cancel")
            self._close_turn("cancelled")
            return True
        if self._pause_requested:
            self._pause_requested = False
            self._data.at_boundary = True
            self._run.send("pause")
            return True
        return False

    def _stop_requested(self) -> bool:
        return self._cancel_requested or self._pause_requested or self._data.cancel_requested

    def _stop_between_calls(self) -> bool | Awaitable[bool]:
        # (`_due` and `_stop_requested`, inlined: asked between every two calls of a round)
        if (
            (self._undelivered or self._claim_due or self._flight is not None)
            and self._listeners
            and not self._before_call()
        ):
            flight = self._flight
            if not (self._behind and flight is not None and not flight.pending.begun):
                return self._told_then_stop()
            # (writing behind a save not begun yet, `_tell` has nothing to do: no coroutine)
        return self._cancel_requested or self._pause_requested or self._data.cancel_requested

    def _before_call(self) -> bool:
        """At the boundary before a round's next call: whether its start stores what waits.

        Writing behind, if the call's tool is not idempotent, nothing more is saved behind
        (`_behind` ends): all is stored before its body. The boundary then leaves the batch
        to the call's start: its ``tool_started`` is saved with it in one transaction, and
        told with it (a round of N such calls costs N+1 commits, not 2N; a cancel or pause
        a listener asks for on hearing of them is taken at the boundary after the call,
        docs/contract.md §3). Otherwise the boundary stores and tells (or writes behind).

        Returns:
            True if the boundary leaves the batch to the next call's start (not told here).
        """
        if not (self._behind or self._pipelined):
            return False  # (`_commit` stores and tells at the boundary, as without a store)
        answered = {result.call_id for result, _ in self._answers} if self._answers else ()
        call = next((c for c in self._round if c.id not in answered), None)
        if call is None:
            self._behind = False
            return False
        if self._idempotent(call.name):
            return False
        self._behind = False
        return self._pipelined

    async def _told_then_stop(self) -> bool:
        await self._tell()
        return self._stop_requested()

    def _apply_requests(self) -> bool:
        """At the end of a step whose turn came to rest: take the requests it left.

        A pause asked for while the turn's last step ran pauses the run where the turn left
        it (completed, failed, or a wait); a cancel cancels the wait the turn entered. A
        request the run's state has no transition for is moot (the turn already ended).

        Returns:
            Whether a request was taken.
        """
        taken = False
        if self._data.state == RunState.BUSY:
            return taken
        if self._cancel_requested or self._data.cancel_requested:
            self._cancel_requested = False
            if self._run.can_send("cancel"):
                self._run.send("cancel")
                self._close_turn("cancelled")
                taken = True
        if self._pause_requested:
            self._pause_requested = False
            if self._run.can_send("pause"):
                self._run.send("pause")
                taken = True
        return taken

    def _deadline(self, action: bool) -> float | None:
        timeout = self.action_timeout if action else self.input_timeout
        return None if timeout is None else self._clock() + timeout

    async def _tool_round(self) -> None:
        if (
            self._undelivered or self._claim_due or self._flight is not None  # (`_due`)
        ) and not self._before_call():
            await self._tell()  # (else the first call's start stores and tells it)
        data = self._data
        settling = bool(self._started)  # (only a round resumed after a crash has some)
        stop: Callable[[], bool | Awaitable[bool]] | None = self._stop_between_calls
        if self._settles(settling) and (stop := await self._stop_for_round(settling)) is None:
            return  # a request taken at the boundary before the round
        context = context_of(
            data.run_id, data.turn, data.iteration, "", self.user_id, None, self._call_deps
        )
        if not settling:  # (settled, it is as the answers left it, as replay has it)
            data.at_boundary = False
        calls = self._round
        answers = self._answers
        decisions, resumed = self._decisions, False
        if self._delegates is not None:  # a round may have stopped at a sub-agent's call
            decisions, resumed = self._delegated_decisions(calls)
        round_ = await self.tools.run_checked_round(  # the run's own inputs: types known
            calls,
            context,
            decisions=decisions,
            enabled=self.enabled_tools,
            messages=self._messages,
            answered={result.call_id: (result, message) for result, message in answers}
            if answers
            else None,
            on_start=self._on_start,
            on_answer=self._on_answer,
            stop=stop,
            resumes=self._resumes() if self._inputs else None,
            on_input=self._on_input,
            delegates=self._delegates,
            resumed=resumed,
            on_show=self._on_show,
        )
        results = round_.results
        if self._asking is not None or len(results) < len(calls):
            self._round_stopped(calls, round_)
            return
        # The round's tool messages, in call order, are the first of its messages (those it
        # had answered before included): no need to order the answers again.
        self._close_round(round_.messages[: len(calls)])
        if len(round_.messages) > len(calls):  # (what after_tools handlers added)
            self._append(round_.messages[len(calls) :])
        if self._deferred:  # (messages held back while the round was open)
            self._flush_deferred()
        self._trace_round(calls, results)
        loop = self._loop if self._loop is not None else self._loop_machine()  # (no call)
        loop.send_trusted("tools_finished", {})
        if data.loop_state == _EXHAUSTED:
            await self._finish(_EXHAUSTED)
        elif self._sources:
            await self._relist_changed()

    def _settles(self, settling: bool) -> bool:
        """Whether the boundary before a round's first call has more to do than tell.

        It has if the round settles calls a crash left started, if a cancel or pause was
        asked for, or if the round goes on at a sub-agent's call (its child may be busy).
        """
        return settling or self._stop_requested() or self._data.loop_state == _DELEGATING

    async def _stop_for_round(self, settling: bool) -> Callable[[], bool | Awaitable[bool]] | None:
        """At the boundary before a round's first call: take a cancel or pause asked for.

        A round resumed after a crash first settles its calls started with no stored answer
        (a call started is no step boundary, I10): a call answered "outcome unknown" is
        answered before the request is taken; an idempotent call runs again first, and the
        request is taken at the boundary after it. A child it left busy (its process stopped
        while the child worked) comes to rest before it (I14); a child that cannot pause now
        is taken up by its call first, with the pause (`_stop_stranded_child`).

        Returns:
            None if the request was taken (the round stops); else the round's ``stop``
            between two calls (`_settling_stop` for a round that settles).
        """
        first: tuple[str, ...] = ()
        if settling:
            self._data.at_boundary = False
            first = self._settle_unknown()
        if (
            not first
            and self._stop_requested()
            and (self._delegates is None or await self._stop_stranded_child())
            and self._stop_at_boundary()
        ):
            return None
        if first or self._data.loop_state == _DELEGATING:
            return self._settling_stop(first)
        return self._stop_between_calls

    def _settling_stop(self, first: tuple[str, ...]) -> Callable[[], Awaitable[bool]]:
        """`_stop_between_calls` for a round taken up after a crash, as it settles.

        A request asked for meanwhile is never taken right before a call of ``first`` (a call
        started before the crash and run again: no step boundary, I10), nor before the call
        of a child left busy that has not come to rest first (I14): that child is cancelled
        or paused first, or, if it cannot pause, taken up by its call with the pause.
        """

        async def stop() -> bool:
            asked = self._stop_between_calls()
            if not (asked if isinstance(asked, bool) else await asked):
                return False
            answered = {result.call_id for result, _ in self._answers}
            upcoming = next((call.id for call in self._round if call.id not in answered), None)
            if upcoming in first:
                return False  # it runs first: the boundary after it takes the request
            return self._delegates is None or await self._stop_stranded_child()

        return stop

    def _delegated_decisions(
        self, calls: tuple[ToolCall, ...]
    ) -> tuple[Mapping[str, Decision], bool]:
        """The decisions of the round's calls, and whether it resumes (sub-agent tools).

        A round of a run with sub-agent tools may have stopped at a sub-agent's call before.
        """
        ids = {call.id for call in calls}
        decisions = {key: value for key, value in self._decisions.items() if key in ids}
        resumed = len(decisions) < len(self._decisions) or (
            self._loop_machine().state == LoopState.DELEGATING
        )
        return decisions, resumed

    def _round_stopped(self, calls: tuple[ToolCall, ...], round_: RoundResult) -> None:
        """The round stopped before its last call: a call asks the user, or at a boundary."""
        if self._asking is not None:
            self._defer(round_.messages[len(round_.results) :])
            self._ask_user(*self._asking)
            return
        # Stopped at the boundary between two calls: a cancel answers the rest
        # "cancelled"; a pause keeps the round open, and the rest run on resume.
        done = len(round_.results)
        self._defer(round_.messages[done:])
        if self._data.state != RunState.BUSY:
            return  # a sub-agent's call waits for its child's wait to be answered
        if self._cancel_requested or self._data.cancel_requested:
            self._trace_round(calls[:done], round_.results)
        self._stop_at_boundary()

    def _resumes(self) -> dict[str, JSONObject] | None:
        """The `ToolContext.resume` of the open round's calls the user has answered."""
        return {c: r for c, r in self._inputs.items() if "answer" in r} or None

    def _on_input(self, call: ToolCall, asked: InputRequest) -> None:
        self._asking = (call, asked)

    def _ask_user(self, call: ToolCall, asked: InputRequest) -> None:
        """A call's tool asked the user: the round waits in input_required with the question."""
        self._asking = None
        self._started = tuple(i for i in self._started if i != call.id)
        self._data.at_boundary = not self._started
        self._inputs = {**self._inputs, call.id: {"request": asked.request}}
        question = asked.question.strip() or f"The tool {call.name!r} needs your answer."
        self._loop_machine().send(
            "input_requested", call_id=call.id, question=question, request=asked.request
        )
        self._run.send(
            "need_input", question=question, calls=[call.id], deadline=self._deadline(False)
        )

    def _trace_round(self, calls: tuple[ToolCall, ...], results: tuple[ToolResult, ...]) -> None:
        data = self._data
        told: list[ToolExecutionTrace] | None = [] if self._tells() else None
        self._keep(
            packed_tool_entries(calls, results, data.turn, data.iteration, self._clock(), told),
            told,
        )

    def _settle_unknown(self) -> tuple[str, ...]:
        """Resuming a round: a call that started with no stored answer ran, or may have.

        An idempotent tool's call runs again; any other gets an error tool message saying
        its outcome is unknown, and never runs twice (I11).

        Returns:
            The calls that run again (each with a ``tool_started`` and no answer in the log).
        """
        rerun: tuple[str, ...] = ()
        for call_id in tuple(self._started):
            call = next((c for c in self._round if c.id == call_id), None)
            found = None if call is None else self.tools.registry.find(call.name)
            if call is not None and found is not None and found.idempotent:
                self._started = tuple(i for i in self._started if i != call_id)
                rerun = (*rerun, call_id)
                continue
            name = call.name if call is not None else "unknown"
            info = ToolErrorInfo(
                type=OUTCOME_UNKNOWN,
                message="the call started before the process stopped and its outcome is "
                "unknown; it was not run again, since the tool is not idempotent",
            )
            result = ToolResult(
                call_id=call_id, tool_name=name, status=ToolStatus.ERROR, error=info
            )
            text = failure_content(ToolStatus.ERROR, info)
            self._on_answer(result, Message.tool(call_id, text, name=name))
        return rerun

    def _on_start(self, call: ToolCall) -> Awaitable[None] | None:
        self._data.at_boundary = False  # a body runs
        fields = call.__dict__  # (a dict item costs less than a pydantic attribute)
        call_id = fields["id"]
        self._started = (*self._started, call_id)
        self._note(_TOOL_STARTED, {"call_id": call_id, "name": fields["name"]})
        if not (self._undelivered or self._claim_due or self._flight is not None):
            return None  # (`_due`, inlined: nothing to store or tell before the body)
        if self._grouping and self._may_start_unsaved(call):
            if self._behind:
                self._write_behind()
            return None
        return self._commit()  # stored before the body runs: it never runs twice (I11)

    def _may_start_unsaved(self, call: ToolCall) -> bool:
        """Whether ``call``'s body may run before its ``tool_started`` is stored.

        Only an idempotent tool's, which a crash in its body runs again (I11), and only when
        all else is stored (with listeners, the step boundary before the call stored it), or,
        writing behind, when all that is not stored yet is replayable (`_behind`): the
        call's input, the claim of a restored run (a losing resumer runs nothing) and a
        non-idempotent call's answer are never lost to a crash in a body.
        """
        return self._idempotent(call.name) and (self._behind or self._holds_only_starts())

    def _idempotent(self, name: str) -> bool:
        """Whether the registered tool ``name`` is declared idempotent (unknown: it is not)."""
        found = self.tools.registry.find(name)
        return found is not None and found.idempotent

    def _answered_once(self, name: str) -> None:
        """A non-idempotent body has answered: stored before the next effect (no write-behind)."""
        if not self._idempotent(name):
            self._behind = False

    def _on_show(self, call: ToolCall, content: tuple[ContentPart, ...]) -> None:
        """A call's content for the user only: recorded (and told), never the model's."""
        shown: list[JSONValue] = [
            part.model_dump(mode="json", exclude_none=True) for part in content
        ]
        self._note(
            RecordKind.USER_CONTENT, {"call_id": call.id, "name": call.name, "content": shown}
        )

    def _on_answer(self, result: ToolResult, message: Message) -> None:
        started = self._started
        given = result.__dict__  # (a dict item costs less than a pydantic attribute)
        call_id = given["call_id"]
        if self._behind and call_id in started:
            self._answered_once(result.tool_name)
        if started == (call_id,):  # (calls run one at a time: the usual case)
            self._started = ()
        elif call_id in started:
            self._started = tuple(i for i in started if i != call_id)
        self._answers = (*self._answers, (result, message))
        if call_id in self._inputs:
            self._inputs = {c: r for c, r in self._inputs.items() if c != call_id}
        # Between two calls of a round is a step boundary (docs/contract.md §3).
        self._data.at_boundary = not self._started
        if self.store is None and not self._listeners:  # (`_dump`, inlined: nobody reads it)
            data: JSONObject = {"result": {}, "message": {}}
        elif (
            type(result) is ToolResult
            and type(message) is Message
            and type(output := given["output"]) is str
            and given["error"] is None
            and not message.parts  # (media: its message is more than its output)
        ):
            # `result_json` and `message_json`, inlined for a text output (the usual one),
            # the result's JSON copied from its fields, in their order (JSON but for its
            # status and error): the record of every call (a test pins the two equal). The
            # tool message of such a result (a text output, no error) is
            # ``tool_message(call_id, output, tool_name)``: the `ToolSystem` makes every
            # message it answers with from its result, a text output being the message's
            # text (a test pins it). So its JSON is made from the result's fields, without
            # reading the message's (a pydantic attribute costs several dict items).
            dumped = given.copy()
            dumped["status"] = str(given["status"])
            data = {
                "result": dumped,
                "message": {
                    "role": "tool",
                    "content": output,
                    "tool_calls": [],
                    "tool_call_id": call_id,
                    "name": given["tool_name"],
                },
            }
        else:
            data = {"result": result_json(result), "message": message_json(message)}
        self._note(_TOOL_RESULT, data)

    def _close_round(self, messages: tuple[Message, ...] | None = None) -> None:
        """The open round's tool messages join the conversation, in call order.

        Args:
            messages: Those messages, if the caller has them in call order already.
        """
        self._data.at_boundary = True
        self._messages += (
            tuple(round_messages(self._round, self._answers)) if messages is None else messages
        )
        self._answers, self._started, self._decisions = (), (), NO_DECISIONS
        self._inputs = NO_INPUTS
        self._round = ()
        self._note(_ROUND_CLOSED, {})

    def _close_turn(self, why: str) -> None:
        """After cancel or expire: end the loop and answer what was left unanswered (I7).

        A call whose tool source waits for the user's answer in this process (an MCP server
        asking mid-call) is given up there too: the server is answered ``cancel``.
        """
        if self._loop is not None and not self._loop.is_final:
            self._loop.send("abort", reason=why)
        if self._inputs and self._sources:
            asking = [call_id for call_id, wait in self._inputs.items() if "answer" not in wait]
            for source in self._sources:
                abandon = getattr(source, "abandon", None)  # (an optional method)
                if abandon is not None:
                    for call_id in asking:
                        abandon(call_key(self._data.run_id, call_id))
        self._answer_unanswered(why)
        self._flush_deferred()

    def _answer_unanswered(self, why: str) -> None:
        if not self._round:
            return
        answered = {result.call_id for result, _ in self._answers}
        for call in self._round:
            if call.id in answered:
                continue
            info = ToolErrorInfo(type=why, message=f"the call was {why}")
            content = json.dumps({"error": info.model_dump()})
            result = ToolResult(
                call_id=call.id, tool_name=call.name, status=ToolStatus.ERROR, error=info
            )
            self._on_answer(result, Message.tool(call.id, content, name=call.name))
        self._close_round()

    async def _expire_if_due(self) -> None:
        """Expire an overdue wait before a call goes on; the expiry is stored first.

        Stored (and told) on its own, so that what the call then refuses names a state the
        store holds, and a save the store refuses is what escapes, the run staying as stored
        (I12): its wait, still overdue, expires at the next call.
        """
        # The machine's own guard decides whether the wait is overdue.
        now = self._clock()
        if self._run.can_send("expire", now=now):
            self._expire(now)
            await self._commit()

    def _expire(self, now: float) -> None:
        self._run.send("expire", now=now)
        self._close_turn("expired")
