"""Replay (I10) and tampering on PostgreSQL.

The log an Agent stored rebuilds its snapshot, and a log edited in the database is refused
naming the first event that does not fit.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfsm import Agent, Event, ScriptedModel, replay
from agentfsm.errors import ReplayError
from agentfsm.llm.base import ModelResponse
from agentfsm.states import InputPolicy
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing import assert_history_valid
from tests.stores.test_exact_replay import (
    ACTIONS,
    RESPONSES,
    RUN_ID,
    TAMPERINGS,
    act,
    buy,
    look,
)

_runs = itertools.count()


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    # all its connections open at once: none is opened during a hypothesis draw
    with PostgresStore(postgres_url, min_size=4, max_size=4) as opened:
        yield opened


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    responses=st.lists(RESPONSES, max_size=8),
    actions=st.lists(ACTIONS, max_size=8),
    policy=st.sampled_from(list(InputPolicy)),
)
def test_replaying_a_stored_log_gives_the_stored_snapshot_after_every_step(
    store: PostgresStore,
    responses: list[ModelResponse],
    actions: list[str],
    policy: InputPolicy,
) -> None:
    run_id = f"run-{next(_runs)}"
    model = ScriptedModel(responses, fallback=lambda m, t: ModelResponse(content="Fallback."))
    agent = Agent(
        model, [look, buy], store=store, run_id=run_id, max_iterations=3, input_policy=policy
    )
    agent.start()
    for action in actions:
        act(agent, action)
        stored = store.load(run_id)
        assert stored is not None
        rebuilt = replay(store.events(run_id), expected=stored)
        assert rebuilt.model_dump(exclude={"trace", "version"}) == stored.model_dump(
            exclude={"trace", "version"}
        )
        waiting = agent.state in ("requires_action", "input_required") or (
            agent.state == "paused" and bool(agent.pending)
        )
        assert_history_valid(stored.messages, open_round=waiting)


def record(store: PostgresStore) -> list[Event]:
    model = ScriptedModel().tool_call("look", city="Oslo").tool_call("buy", item="tea").text("Ok.")
    agent = Agent(model, [look, buy], store=store, run_id=RUN_ID)
    agent.start()
    agent.submit("Oslo and tea")
    agent.resolve_action({c.id: "approve" for c in agent.pending})
    return store.events(RUN_ID)


def rewrite_in_the_database(url: str, log: list[Event]) -> None:
    """Replace the run's stored log by ``log``, as someone with access to the database could."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("DELETE FROM agentfsm_events WHERE run_id = %s", (RUN_ID,))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO agentfsm_events (run_id, seq, event) VALUES (%s, %s, %s)",
                [(RUN_ID, n, e.model_dump_json()) for n, e in enumerate(log, 1)],
            )


def test_the_untampered_stored_log_replays_to_the_stored_snapshot(store: PostgresStore) -> None:
    log = record(store)
    stored = store.load(RUN_ID)
    assert stored is not None
    assert replay(log, expected=stored).state == "completed"


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_a_log_tampered_with_in_the_database_is_refused_naming_the_event(
    postgres_url: str, store: PostgresStore, tampering: str
) -> None:
    tamper, expected = TAMPERINGS[tampering]
    rewrite_in_the_database(postgres_url, tamper(record(store)))
    with pytest.raises(ReplayError, match=expected) as caught:
        replay(store.events(RUN_ID))
    assert caught.value.seq >= 1
