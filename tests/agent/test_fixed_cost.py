"""A run's fixed cost, cut where the result is pinned.

Run ids drawn from a pool, the checks an Agent skips for what it checked already, what
Agents built alike share.
"""

from __future__ import annotations

import os
import threading
import uuid
import warnings

from hypothesis import given
from hypothesis import strategies as st

from agentfsm import ScriptedModel
from agentfsm.agent import Agent, ids
from tests.agent.agent_support import answer


@given(st.binary(min_size=16 * ids.POOL, max_size=16 * ids.POOL))
def test_a_pools_ids_are_the_uuid4s_of_its_random_bytes(raw: bytes) -> None:
    blocks = [raw[at : at + 16] for at in range(0, len(raw), 16)]

    assert ids.ids_of(raw) == [uuid.UUID(bytes=block, version=4).hex for block in blocks]


def test_drawn_run_ids_are_fresh_uuid4s_across_refills() -> None:
    drawn = [ids.draw_run_id() for _ in range(3 * ids.POOL + 5)]

    assert len(set(drawn)) == len(drawn)
    for found in drawn:
        parsed = uuid.UUID(hex=found)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, found)


def test_threads_drawing_at_once_never_get_the_same_run_id() -> None:
    drawn: list[list[str]] = [[] for _ in range(8)]
    barrier = threading.Barrier(len(drawn))

    def draw(into: list[str]) -> None:
        barrier.wait()
        into.extend(ids.draw_run_id() for _ in range(2 * ids.POOL))

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    every = [found for into in drawn for found in into]
    assert len(every) == len(set(every)) == 16 * ids.POOL


def test_a_forked_child_draws_no_id_its_parent_will() -> None:
    ids.draw_run_id()  # (the pool holds ids the parent has not drawn yet)
    reading, writing = os.pipe()
    with warnings.catch_warnings():  # (3.12+ warns of forking while other threads live)
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        os.close(reading)
        os.write(writing, ids.draw_run_id().encode())
        os._exit(0)
    os.close(writing)
    with os.fdopen(reading, "rb") as pipe:
        childs = pipe.read().decode()
    os.waitpid(child, 0)

    parents = [ids.draw_run_id() for _ in range(ids.POOL)]
    assert uuid.UUID(hex=childs).version == 4
    assert childs not in parents


def test_agents_get_run_ids_of_their_own() -> None:
    agents = [Agent(ScriptedModel([answer("hi")])) for _ in range(ids.POOL + 2)]

    assert len({agent.run_id for agent in agents}) == len(agents)
