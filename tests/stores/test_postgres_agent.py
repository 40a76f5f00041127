"""An Agent on PostgresStore: stored before delivered (I11), restored in another store."""

from __future__ import annotations

from agentfsm import Event
from agentfsm.stores.postgres import PostgresStore
from tests.stores.durable_support import agent

RUN_ID = "run-1"


def test_every_event_is_stored_before_any_listener_sees_it(postgres_url: str) -> None:
    seen: list[int] = []
    with PostgresStore(postgres_url) as store, PostgresStore(postgres_url) as reader:

        def listener(item: object) -> None:
            if isinstance(item, Event):
                # another pool, as another process would read it
                stored = reader.load(RUN_ID)
                assert stored is not None
                # stored with its batch (group commit): the snapshot may be a few events on
                assert stored.seq >= item.seq
                assert reader.events(RUN_ID, after_seq=item.seq - 1)[0] == item
                seen.append(item.seq)

        the_agent = agent(store, RUN_ID, listeners=[listener])
        the_agent.start()
        the_agent.submit("Plan my trip")
        assert seen == list(range(1, len(seen) + 1))
        assert len(seen) > 10

        restored = agent(reader, RUN_ID)
        assert restored.state == "completed"
        assert restored.messages == the_agent.messages
