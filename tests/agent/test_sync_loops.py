"""The sync facade's event loops: one per Agent across its calls, clean ones kept for the next.

A facade's loop, released by `close` (or `shutdown`) with nothing left on it, is kept idle
and taken by the next facade, in any thread; a loop with something of its run left on it
(a task, a callback, an async generator) is closed instead, so no run sees another's.
"""

from __future__ import annotations

import asyncio
import gc
import selectors
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from agentfsm import ScriptedModel
from agentfsm.agent import Agent, _sync
from agentfsm.stores.memory import MemoryStore
from agentfsm.tools import tool
from tests.agent.agent_support import answer, calls


@pytest.fixture(autouse=True)
def _no_idle_loops() -> Iterator[None]:
    _sync.close_idle_loops()
    yield
    _sync.close_idle_loops()


def _agent(*tools: object, steps: int = 1) -> Agent:
    script = [answer(f"done {i}") for i in range(steps)]
    return Agent(ScriptedModel(script), list(tools))  # type: ignore[arg-type]


def _loop_of(agent: Agent) -> asyncio.AbstractEventLoop:
    runner = agent._sync
    assert runner is not None
    assert runner._loop is not None
    return runner._loop


def test_a_closed_facade_s_clean_loop_runs_the_next_agent() -> None:
    first = _agent()
    first.start()
    assert first.submit("hi").reply == "done 0"
    loop = _loop_of(first)
    first.close()

    assert _sync._idle == [loop]
    assert not loop.is_closed()
    second = _agent()
    second.start()
    assert second.submit("hi").reply == "done 0"
    assert _loop_of(second) is loop
    assert _sync._idle == []
    second.shutdown()
    assert _sync._idle == [loop]


def test_an_agent_keeps_its_loop_across_calls_and_takes_another_after_close() -> None:
    agent = _agent(steps=2)
    agent.start()
    loop = _loop_of(agent)
    agent.submit("one")
    assert _loop_of(agent) is loop
    agent.close()
    agent.close()  # (twice: nothing more to release)
    assert _sync._idle == [loop]

    assert agent.submit("two").reply == "done 1"  # takes the idle loop again
    assert _loop_of(agent) is loop
    agent.close()


def test_a_loop_with_a_task_left_on_it_is_closed_not_kept() -> None:
    left: list[asyncio.Task[None]] = []

    @tool
    async def spawn() -> str:
        """Leave a task behind on the loop."""
        left.append(asyncio.ensure_future(asyncio.sleep(3600)))
        return "spawned"

    agent = Agent(ScriptedModel([calls(("c1", "spawn", {})), answer("done")]), [spawn])
    agent.start()
    assert agent.submit("go").reply == "done"
    loop = _loop_of(agent)
    left[0].cancel()  # (not run: the loop is not running; it still counts as left)
    agent.close()

    assert loop.is_closed()
    assert _sync._idle == []


def test_a_loop_with_an_async_generator_left_open_is_closed_after_finalizing_it() -> None:
    finalized: list[str] = []

    async def numbers() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            finalized.append("closed")

    agent = _agent()
    agent.start()
    generator = numbers()

    async def first() -> int:
        return await generator.__anext__()  # left open, mid-iteration, on the loop

    assert agent._sync is not None
    assert agent._sync.run(first()) == 1
    loop = _loop_of(agent)
    agent.close()

    assert loop.is_closed()
    assert finalized == ["closed"]
    assert _sync._idle == []


def test_a_loop_given_its_own_exception_handler_is_closed_not_kept() -> None:
    agent = _agent()
    agent.start()
    loop = _loop_of(agent)
    loop.set_exception_handler(lambda _loop, _context: None)
    agent.close()

    assert loop.is_closed()
    assert _sync._idle == []


def test_idle_loops_are_capped_and_the_rest_closed() -> None:
    agents = [_agent() for _ in range(_sync.IDLE_LOOPS + 2)]
    for agent in agents:
        agent.start()
    loops = [_loop_of(agent) for agent in agents]
    assert len({id(loop) for loop in loops}) == len(agents)  # all open at once: one each
    for agent in agents:
        agent.close()

    assert _sync._idle == loops[: _sync.IDLE_LOOPS]
    assert all(loop.is_closed() for loop in loops[_sync.IDLE_LOOPS :])
    _sync.close_idle_loops()
    assert all(loop.is_closed() for loop in loops)


def test_facades_in_several_threads_share_the_idle_loops_safely() -> None:
    replies: list[str | None] = []
    errors: list[BaseException] = []
    seen: set[int] = set()
    lock = threading.Lock()

    def work() -> None:
        try:
            for _ in range(20):
                agent = _agent()
                agent.start()
                reply = agent.submit("hi").reply
                with lock:
                    replies.append(reply)
                    seen.add(id(_loop_of(agent)))
                agent.close()
        except BaseException as error:  # (reported by the test's own thread)
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert replies == ["done 0"] * 80
    assert len(_sync._idle) <= _sync.IDLE_LOOPS
    assert all(not loop.is_closed() and not loop.is_running() for loop in _sync._idle)
    assert len(seen) <= 4 + _sync.IDLE_LOOPS  # reused, not one per run


def test_a_sync_call_inside_a_running_loop_takes_no_loop() -> None:
    agent = _agent()

    async def misuse() -> None:
        agent.start()

    with pytest.raises(RuntimeError, match="await its async form"):
        asyncio.run(misuse())
    assert agent._sync is not None
    assert agent._sync._loop is None
    assert _sync._idle == []


def test_a_facade_dropped_without_close_leaves_its_clean_loop_idle() -> None:
    gc.collect()  # (earlier tests' dropped facades release theirs now, not below)
    _sync.close_idle_loops()
    agent = _agent()
    agent.start()
    loop = _loop_of(agent)
    del agent
    gc.collect()

    assert loop in _sync._idle
    assert loop not in _sync._held


def test_a_loop_closed_behind_the_facade_s_back_is_replaced() -> None:
    agent = _agent(steps=2)
    agent.start()
    loop = _loop_of(agent)
    loop.close()

    assert agent.submit("hi").reply == "done 0"
    assert _loop_of(agent) is not loop
    assert loop not in _sync._held
    agent.close()


@pytest.mark.parametrize("store", [None, MemoryStore()], ids=["no store", "a store"])
def test_a_sync_start_runs_in_a_task_on_the_facade_s_loop(store: MemoryStore | None) -> None:
    agent = Agent(ScriptedModel([answer("hi")]), store=store)
    seen: list[asyncio.Task[object] | None] = []
    agent.add_listener(lambda event: seen.append(asyncio.current_task()))

    agent.start()

    assert len(seen) == 1
    assert seen[0] is not None  # (listeners of a start may use what asks for a task)
    assert asyncio.events._get_running_loop() is None
    agent.close()


class _CountingSelector(selectors.DefaultSelector):
    """The default selector, counting its polls (one per pass of the loop)."""

    polls = 0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self.polls += 1
        return super().select(timeout)


@pytest.fixture
def counted() -> Iterator[tuple[asyncio.AbstractEventLoop, _CountingSelector]]:
    selector = _CountingSelector()
    loop = asyncio.SelectorEventLoop(selector)
    yield loop, selector
    loop.close()


def test_run_once_finishes_a_coroutine_that_never_waits_in_one_pass(
    counted: tuple[asyncio.AbstractEventLoop, _CountingSelector],
) -> None:
    loop, selector = counted
    seen: list[asyncio.Task[object] | None] = []

    async def work() -> int:
        seen.append(asyncio.current_task())
        return 7

    assert _sync.run_once(loop, work()) == 7
    assert selector.polls == 1  # (run_until_complete polls twice)
    assert seen[0] is not None
    assert seen[0].get_loop() is loop
    assert not loop.is_running()
    assert _sync._is_clean(loop)

    assert loop.run_until_complete(work()) == 7
    assert selector.polls == 3  # the pass saved


def test_run_once_goes_on_for_a_coroutine_that_waits(
    counted: tuple[asyncio.AbstractEventLoop, _CountingSelector],
) -> None:
    loop, _selector = counted

    async def work() -> str:
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)
        return "slept"

    assert _sync.run_once(loop, work()) == "slept"
    assert _sync._is_clean(loop)


def test_run_once_runs_the_callbacks_a_finished_step_left_as_run_until_complete_does(
    counted: tuple[asyncio.AbstractEventLoop, _CountingSelector],
) -> None:
    loop, _selector = counted
    ran: list[str] = []

    async def spawn() -> None:
        loop.call_soon(ran.append, "callback")
        loop.create_task(_note(ran))

    _sync.run_once(loop, spawn())
    ran_once = list(ran)
    ran.clear()
    loop.run_until_complete(spawn())

    assert ran_once == ran == ["callback", "task"]
    assert _sync._is_clean(loop)


async def _note(ran: list[str]) -> None:
    ran.append("task")


@pytest.mark.parametrize("error", [ValueError("bad"), KeyboardInterrupt()])
def test_run_once_raises_what_the_coroutine_raises_and_leaves_nothing_unretrieved(
    counted: tuple[asyncio.AbstractEventLoop, _CountingSelector], error: BaseException
) -> None:
    loop, _selector = counted
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    async def fail() -> None:
        raise error

    with pytest.raises(type(error)):
        _sync.run_once(loop, fail())
    gc.collect()  # (a task whose exception nobody retrieved reports it when freed)

    assert reported == []
    assert not loop.is_running()


def test_run_once_on_a_loop_running_elsewhere_is_refused_as_run_until_complete_does(
    counted: tuple[asyncio.AbstractEventLoop, _CountingSelector],
) -> None:
    loop, _selector = counted
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        loop.call_soon(started.set)
        loop.run_until_complete(loop.run_in_executor(None, release.wait))

    holder = threading.Thread(target=hold)
    holder.start()
    started.wait()

    async def work() -> int:
        return 1

    coroutine = work()
    try:
        with pytest.raises(RuntimeError, match="already running"):
            _sync.run_once(loop, coroutine)
    finally:
        coroutine.close()
        release.set()
        holder.join()
    loop.run_until_complete(loop.shutdown_default_executor())
