"""A server that asks the user in the middle of a call (sessions before 2026-07-28).

On a 2025-11-25 session a server sends ``elicitation/create`` while a ``tools/call`` runs: a
form (a message and a small JSON Schema) or a URL to visit. agentfsm maps it onto the run's
own wait: the call's body returns an `InputRequest` (the run goes to ``input_required``)
while the SDK call stays pending in this process, its deadline paused; the user's answer,
given to the same call's retry, is checked against the form's schema and sent to the server
(accept with its content, decline or cancel), and the call goes on to its result (or to the
next question).

The pending call lives in memory only. A retry that finds none (the process restarted, the
session died, or nobody answered within `Elicitations.wait` seconds, when the server was
told ``cancel``) re-issues the call if the tool is idempotent, answering the same question
with the recorded answer; any other call ends with an `MCPSessionLostError`: its outcome is
unknown. Private to `agentfsm.tools.mcp` (needs the ``mcp`` extra).
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import cast

import anyio
from mcp import types as mcp_types
from mcp.client.context import ClientRequestContext

from agentfsm.errors import MCPSessionLostError
from agentfsm.states.json import JSONObject
from agentfsm.tools._mcp_forms import elicit_result, question_of
from agentfsm.tools._mcp_results import Answer, retry_params
from agentfsm.tools.context import ToolContext
from agentfsm.tools.sources import InputRequest

WAIT = 3600.0
"""Seconds a question asked in the middle of a call waits for the user in this process; then
the server is told ``cancel`` (and a later answer is handled as after a restart)."""

GIVE_UP = 5.0
"""Seconds a call given up while its server asked is left to end after the server is
answered ``cancel`` (the server's tool gets to see the answer), before it is cancelled."""

Replay = tuple[JSONObject, str]
"""A question asked before its session was lost (the persisted request) and the answer."""


class Pending:
    """One call of the run that is running in this process (a task on the sessions' loop)."""

    def __init__(self, key: str, replay: Replay | None) -> None:
        self.key = key
        self.replay = replay
        self.task: asyncio.Task[Answer] | None = None
        self.questions: asyncio.Queue[JSONObject] = asyncio.Queue()
        self.answer: asyncio.Future[mcp_types.ElicitResult] | None = None
        """Set while the server waits for the user's answer."""
        self.scope: anyio.CancelScope | None = None
        """The call's deadline (`MCPServer.timeout`), paused while the user is asked."""
        self._left = 0.0
        self._pauses = 0

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def pause(self) -> None:
        """Stop the call's clock (questions may overlap: a server that gave up on one)."""
        if self.scope is not None and not self._pauses:
            self._left = self.scope.deadline - anyio.current_time()
            self.scope.deadline = math.inf
        self._pauses += 1

    def unpause(self) -> None:
        self._pauses -= 1
        if self.scope is not None and not self._pauses:
            self.scope.deadline = anyio.current_time() + self._left

    def abandon(self) -> None:
        if self.answer is not None and not self.answer.done():
            self.answer.set_result(mcp_types.ElicitResult(action="cancel"))
        if self.task is not None:
            self.task.cancel()


class Elicitations:
    """The calls of one `MCPServer` running in this process, and the questions they wait on.

    Every method runs on the sessions' loop (`agentfsm.tools.mcp_sessions`).

    Args:
        prefix: The server's prefix, for errors.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.token = uuid.uuid4().hex
        """Names this object's calls in the requests persisted with runs: a retry that
        carries another token was asked by a session of another process (or object)."""
        self.wait = WAIT
        """Seconds a question waits for the user in this process (`WAIT`)."""
        self._calls: dict[str, Pending] = {}

    @property
    def waiting(self) -> int:
        """How many calls wait for the user's answer now."""
        return sum(1 for pending in self._calls.values() if pending.answer is not None)

    def step(
        self,
        context: ToolContext,
        remote: str,
        arguments: dict[str, object],
        idempotent: bool,
        run: Callable[[mcp_types.CallToolRequestParams, Pending], Awaitable[Answer]],
    ) -> Coroutine[object, object, Answer | InputRequest] | InputRequest:
        """What a call's body does on the sessions' loop: start the call, or go on with it.

        A retry with the answer to a question asked mid-call gives it to the pending call
        (`resume`); any other call starts (`start`), with an answer to an input-required
        result in its params. An answer to an input-required result that does not fit
        its form is the same question again, and nothing is sent.
        """
        key = context.idempotency_key
        mid_call = asked_mid_call(context.resume)
        if mid_call is not None:
            first = mcp_types.CallToolRequestParams(name=remote, arguments=arguments)

            async def again(replay: Replay) -> Answer | InputRequest:
                return await self.start(key, lambda pending: run(first, pending), replay)

            return self.resume(key, *mid_call, again if idempotent else None, remote)
        try:
            params = retry_params(self.prefix, remote, arguments, context.resume)
        except ValueError as exc:
            request = cast(JSONObject, (context.resume or {}).get("request") or {})
            return InputRequest(f"{exc}\n\n{question_of(request)}", request)
        return self.start(key, lambda pending: run(params, pending))

    async def start(
        self,
        key: str,
        run: Callable[[Pending], Awaitable[Answer]],
        replay: Replay | None = None,
    ) -> Answer | InputRequest:
        """Start the call ``key`` (``run``) and wait for its answer or its first question."""
        old = self._calls.pop(key, None)
        if old is not None:
            old.abandon()
        pending = Pending(key, replay)
        self._calls[key] = pending
        pending.task = asyncio.ensure_future(run(pending))
        pending.task.add_done_callback(_retrieved)
        return await self._next(pending)

    async def resume(
        self,
        key: str,
        request: JSONObject,
        text: str,
        reissue: Callable[[Replay], Awaitable[Answer | InputRequest]] | None,
        tool: str,
    ) -> Answer | InputRequest:
        """Give the user's answer to the question of the call ``key``, and go on.

        An answer that does not fit asks again (the server still waits). A call the server
        answered without the user (it stopped waiting) gives that answer. With no pending
        call in this process, ``reissue`` starts the call again (an idempotent tool).

        Raises:
            MCPSessionLostError: No pending call here and the tool is not idempotent.
        """
        pending = self._calls.get(key) if request.get("session") == self.token else None
        if pending is not None and _answered_alone(pending):
            self._forget(pending)  # the server stopped waiting and answered without the user
            return cast("asyncio.Task[Answer]", pending.task).result()
        if pending is None or pending.answer is None or not pending.running:
            if pending is not None:
                self._forget(pending)
            if reissue is not None:
                return await reissue((request, text))
            raise MCPSessionLostError(self.prefix, tool, str(request.get("message", "")))
        if not pending.questions.empty():  # it stopped waiting for this one and asked anew
            return await self._next(pending)
        try:
            result = elicit_result(self.prefix, tool, request, text)
        except ValueError as exc:
            return InputRequest(f"{exc}\n\n{question_of(request)}", request)
        if not pending.answer.done():
            pending.answer.set_result(result)
        return await self._next(pending)

    async def _next(self, pending: Pending) -> Answer | InputRequest:
        """The call's next question, or its answer (the call is then forgotten)."""
        assert pending.task is not None
        getter = asyncio.ensure_future(pending.questions.get())
        try:
            await asyncio.wait((pending.task, getter), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            getter.cancel()
            self._forget(pending)
            raise
        if getter.done():
            request = getter.result()
            return InputRequest(question_of(request), request)
        getter.cancel()
        self._forget(pending)
        return pending.task.result()

    async def abandon(self, key: str) -> bool:
        """The run gave up the call ``key`` while it waited for the user (cancel, expiry).

        The server is answered ``cancel``, and its call is left `GIVE_UP` seconds to end on
        its own (its answer is not wanted) before it is cancelled. Returns whether such a
        call was pending here.
        """
        pending = self._calls.pop(key, None)
        if pending is None:
            return False
        if pending.answer is not None and not pending.answer.done():
            pending.answer.set_result(mcp_types.ElicitResult(action="cancel"))
        if pending.task is not None:
            asyncio.get_running_loop().call_later(GIVE_UP, pending.task.cancel)
        return True

    def _forget(self, pending: Pending) -> None:
        if self._calls.get(pending.key) is pending:
            del self._calls[pending.key]
        pending.abandon()

    async def ask(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        """The SDK's elicitation callback: a server asks the user in the middle of a call.

        The server cannot say which of its running calls asks: the oldest one not already
        waiting for an answer does (or the oldest one, whose server gave up its question).
        """
        running = [p for p in self._calls.values() if p.running]
        pending = next((p for p in running if p.answer is None), running[0] if running else None)
        if pending is None:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message="agentfsm asks the user only for a tool call it is making",
            )
        request = request_of(params, self.token)
        replayed = _replayed(self.prefix, pending, request)
        if replayed is not None:
            return replayed
        answer: asyncio.Future[mcp_types.ElicitResult]
        pending.answer = answer = asyncio.get_running_loop().create_future()
        pending.pause()
        pending.questions.put_nowait(request)
        try:
            return await asyncio.wait_for(asyncio.shield(answer), self.wait)
        except TimeoutError:
            self._calls.pop(pending.key, None)  # a later answer finds no call here
            return mcp_types.ElicitResult(action="cancel")
        finally:  # (answered, or the server gave up on it: it may have asked anew already)
            if pending.answer is answer:
                pending.answer = None
            pending.unpause()


def _answered_alone(pending: Pending) -> bool:
    """Whether the call ended with the server's answer while the user was asked."""
    task = pending.task
    return task is not None and task.done() and not task.cancelled() and not task.exception()


def _replayed(prefix: str, pending: Pending, request: JSONObject) -> mcp_types.ElicitResult | None:
    """The recorded answer, if the call re-issued after a loss asks the same question."""
    replay, pending.replay = pending.replay, None
    if replay is None:
        return None
    asked, text = replay
    same = all(asked.get(k) == request.get(k) for k in ("elicit", "message", "schema", "url"))
    if not same:
        return None
    try:
        return elicit_result(prefix, "", request, text)
    except ValueError:
        return None


def request_of(params: mcp_types.ElicitRequestParams, token: str) -> JSONObject:
    """What the run persists of a question asked in the middle of a call."""
    request: JSONObject = {"elicit": params.mode, "message": params.message}
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        request.update(url=params.url, elicitation_id=params.elicitation_id)
    else:
        request["schema"] = cast(JSONObject, params.requested_schema)
    request["session"] = token
    return request


def asked_mid_call(resume: JSONObject | None) -> tuple[JSONObject, str] | None:
    """The question and the user's answer of a retry after a question asked mid-call."""
    if resume is None:
        return None
    request = resume.get("request")
    if not isinstance(request, dict) or "elicit" not in request:
        return None
    return request, str(resume.get("answer", ""))


def _retrieved(task: asyncio.Task[Answer]) -> None:
    """A call nobody waits for any more (its run was cancelled): its outcome is dropped."""
    if not task.cancelled():
        task.exception()
