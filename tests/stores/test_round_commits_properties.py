"""Properties of the merged saves of a round, writing behind (SQLite), for any round.

A round is any sequence of calls to an idempotent tool and a tool that is not, the run with a
listener or without. Whatever the round: a listener hears only what is stored (I11); a body
that is not idempotent runs only once its ``tool_started`` and all produced before it are
stored; a round of N calls that are not idempotent costs N+1 commits. Killed in or right after
any save, the resumed run runs no non-idempotent call twice, and answers one whose start was
stored without its answer "outcome unknown" (I11), never running it again.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfsm import Agent, Event, ScriptedModel, SQLiteStore, replay, tool
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import Message, RunState, ToolCall
from agentfsm.states.json import JSONObject
from agentfsm.stores import RunStore, Snapshot
from agentfsm.stores.base import DelegatingStore
from agentfsm.testing import assert_history_valid

RUN_ID = "run-1"
NAMES = {True: "idem", False: "once"}
"""The tool a call names, by whether it is idempotent."""

rounds = st.lists(st.booleans(), min_size=1, max_size=4)
"""A round: for each call, whether its tool is idempotent."""


class Died(BaseException):
    """The simulated process died at this save (in it, or right after it committed)."""


class Dying(DelegatingStore):
    """A store that counts its saves and dies at the ``die_at``-th (or never)."""

    def __init__(self, inner: RunStore, die_at: int | None, after_commit: bool) -> None:
        super().__init__(inner)
        self.saves = 0
        self.die_at = die_at
        self.after_commit = after_commit
        self.dead = False

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        dying = self.saves + 1 == self.die_at
        if self.dead or (dying and not self.after_commit):
            self.dead = True
            raise Died
        super().save(snapshot, events, expected_version=expected_version)
        self.saves += 1
        if dying:
            self.dead = True
            raise Died


def runner(
    store: RunStore, pattern: list[bool], on_body: Callable[[str], None], listening: bool
) -> tuple[Agent, list[Event]]:
    """An agent whose one round calls ``idem`` or ``once`` as ``pattern`` says; what it told."""

    def reply(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        if messages[-1].role == "user":
            calls = tuple(
                ToolCall(id=f"c{n}", name=NAMES[idem], arguments=json.dumps({"n": n}))
                for n, idem in enumerate(pattern)
            )
            return ModelResponse(tool_calls=calls, finish_reason=FinishReason.TOOL_CALLS)
        return ModelResponse(content="done")

    @tool(idempotent=True)
    def idem(n: int) -> str:
        """An idempotent call."""
        on_body(f"c{n}")
        return f"idem {n}"

    @tool
    def once(n: int) -> str:
        """A call that must run at most once."""
        on_body(f"c{n}")
        return f"once {n}"

    told: list[Event] = []

    def listener(item: object) -> None:
        if isinstance(item, Event):
            told.append(item)

    the_agent = Agent(
        ScriptedModel(fallback=reply),
        [idem, once],
        store=store,
        run_id=RUN_ID,
        listeners=[listener] if listening else [],
        ask_user=False,
        lease=None,
    )
    return the_agent, told


FAST = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FAST
@given(pattern=rounds, listening=st.booleans())
def test_a_body_runs_once_all_before_its_start_is_stored_and_only_stored_events_are_told(
    tmp_path_factory: pytest.TempPathFactory, pattern: list[bool], listening: bool
) -> None:
    path = tmp_path_factory.mktemp("round") / "runs.db"
    with SQLiteStore(path) as sqlite:
        store = Dying(sqlite, None, False)
        ran: list[str] = []
        seen: list[tuple[int, int, int, tuple[str, ...]]] = []  # (a body's raise is its answer)

        def on_body(call_id: str) -> None:
            ran.append(call_id)
            stored = sqlite.load(RUN_ID)
            assert stored is not None
            told_seq = max((event.seq for event in told), default=0)
            seen.append((told_seq, stored.seq, the_agent.snapshot().seq, tuple(stored.started)))

        the_agent, told = runner(store, pattern, on_body, listening)
        the_agent.start("go")

        assert the_agent.state == RunState.COMPLETED
        assert ran == [f"c{n}" for n in range(len(pattern))]
        for n, (told_seq, stored_seq, made_seq, started) in enumerate(seen):
            assert told_seq <= stored_seq  # I11
            if not pattern[n]:  # not idempotent: its start, and all made before, are stored
                assert stored_seq == made_seq
                assert started == (f"c{n}",)
        stored = sqlite.load(RUN_ID)
        assert stored is not None
        replay(sqlite.events(RUN_ID), expected=stored)
        if listening:
            assert [event.seq for event in told] == list(range(1, stored.seq + 1))
        if not any(pattern):  # the input, the reply with the first start, each answer with
            assert store.saves == 1 + len(pattern) + 1 + 1  # the next start, the last; the end


@FAST
@given(
    pattern=rounds,
    listening=st.booleans(),
    die_at=st.integers(min_value=1, max_value=7),
    after=st.booleans(),
)
def test_a_run_killed_in_or_after_any_save_runs_no_call_twice_that_is_not_idempotent(
    tmp_path_factory: pytest.TempPathFactory,
    pattern: list[bool],
    listening: bool,
    die_at: int,
    after: bool,
) -> None:
    path = tmp_path_factory.mktemp("killed") / "runs.db"
    with SQLiteStore(path) as sqlite:
        dying = Dying(sqlite, die_at, after)
        ran: list[str] = []

        def first_body(call_id: str) -> None:
            if not dying.dead:  # (a body after the death never ran)
                ran.append(call_id)

        first, _ = runner(dying, pattern, first_body, listening)
        with contextlib.suppress(Died):
            first.start("go")
        stored = sqlite.load(RUN_ID)
        unknown = set() if stored is None else set(stored.started)
        if stored is not None:
            replay(sqlite.events(RUN_ID), expected=stored)  # I10 after the kill
        resumed, _ = runner(sqlite, pattern, ran.append, listening)
        resumed.start() if stored is not None else resumed.start("go")
        assert resumed.state == RunState.COMPLETED
        final = resumed.messages
    assert_history_valid(final)
    for n, idem in enumerate(pattern):
        call_id = f"c{n}"
        answer = next(m for m in final if m.role == "tool" and m.tool_call_id == call_id)
        if idem:
            assert ran.count(call_id) >= 1
            continue
        assert ran.count(call_id) <= 1  # at most once (I11)
        if call_id in unknown:  # started, its answer not stored: never run again
            assert "ToolOutcomeUnknown" in str(answer.content)
        else:
            assert ran.count(call_id) == 1
            assert str(answer.content) == f"once {n}"
