"""The run's record beside its machines, and its persistence.

The conversation, the open round and the trace, saved before each event is delivered (I11).

Group commit: during a step, the events a run produces between two external effects (a model
call, a tool body, the return to the caller; an idempotent tool's body only if more than
``tool_started`` records wait, see `TurnDriver._may_start_unsaved`) wait in a batch;
`RunRecord._commit`, awaited just before the effect, saves the batch and the snapshot after
it in one transaction, then delivers its events (and the trace entries among them) in order.
Nothing is delivered before it is stored. Outside a step (``reset``) and while a failed step
is settled, each event is saved on its own as it happens, as before.

Write-behind, on a store whose saves run in worker threads (SQLite, PostgreSQL): see
`agentfsm.agent.behind`. There, the step boundary before a tool call that is not idempotent
leaves its batch to the call's start (`ToolRounds._before_call`): one transaction holds both,
so a round of N such calls costs N+1 commits, listeners or not.

`RunRecord` is the lowest layer of the `Agent`: it holds what a run is made of and knows how
to restore it from a `Snapshot`, save it, and tell listeners of it (its trace and the telling
itself are its base's, `agentfsm.agent.delivery`). It decides nothing about the turn;
`TurnDriver` (`agentfsm.agent.turn`) does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from agentfsm.agent.behind import InFlight, Point
from agentfsm.agent.delivery import Delivery
from agentfsm.errors import MCPServerError
from agentfsm.fsm import AnyMachine, Emitter, Engine, RunData, loop_machine, run_machine
from agentfsm.fsm.rounds import open_round
from agentfsm.fsm.trace import Kept
from agentfsm.states.events import EVENT_FIELDS, Event, EventTwin
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall, message_json
from agentfsm.states.names import InputPolicy, MachineName, RecordKind, RunState
from agentfsm.stores.base import RunStore, writes_behind
from agentfsm.stores.snapshot import ForkPoint, Snapshot, ToolAnswer
from agentfsm.tools.policy import Decision
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import ToolResult, result_json
from agentfsm.tools.sources import ToolSource
from agentfsm.tools.system import Answer, ToolSystem

_CONVERSATION = MachineName.CONVERSATION
_BUSY = RunState.BUSY  # (read once: a member read costs a lookup in Python 3.11)

NO_DECISIONS: Mapping[str, Decision] = MappingProxyType({})
"""The decisions of a run with no round open: empty, immutable and shared."""
NO_INPUTS: Mapping[str, JSONObject] = MappingProxyType({})
"""The requests of a round whose tools asked nothing (the usual case): shared, like
`NO_DECISIONS`."""
NO_LISTINGS: Mapping[str, tuple[JSONObject, ...]] = MappingProxyType({})
"""The listings of a run with no tool source listed yet: shared, like `NO_DECISIONS`."""

NO_BATCH: list[Any] = []
"""The batch lists of a run with no store, which never batches (nothing is appended to it
unless grouping, and grouping needs a store): shared and always empty, so such a run makes
no lists of its own."""


class RunRecord(Delivery):
    """A run's data, machines, conversation and trace, and how they are saved and told.

    The `Agent` sets them; `TurnDriver` and the `Agent` add their own slots.
    """

    __slots__ = (
        "_answers",
        "_behind",
        "_config",
        "_data",
        "_decisions",
        "_deferred",
        "_depth",
        "_driven",
        "_emitter",
        "_engine",
        "_grouping",
        "_inputs",
        "_listed",
        "_loop",
        "_messages",
        "_origin",
        "_own",
        "_pipelined",
        "_round",
        "_run",
        "_sources",
        "_started",
        "_system",
        "_unsaved",
        "tools",
    )

    _data: RunData
    _run: AnyMachine
    _loop: AnyMachine | None
    _emitter: Emitter
    _engine: Engine
    _config: tuple[int, int | None, InputPolicy]
    _system: tuple[Message, ...]
    _messages: tuple[Message, ...]
    """The conversation: a tuple, replaced on change (never changed in place), so that it
    is the model's view as it is (I10) and a snapshot's without a copy."""
    _round: tuple[ToolCall, ...]
    _deferred: tuple[Message, ...]
    _decisions: Mapping[str, Decision]
    _answers: tuple[Answer, ...]
    _started: tuple[str, ...]
    _version: int
    _origin: ForkPoint | None
    """For a forked run, where it was forked from (kept in every snapshot it saves)."""
    tools: ToolSystem
    _own: tuple[AnyTool, ...]
    """The application's own tools (and ``ask_user``): offered whatever the sources list."""
    _sources: tuple[ToolSource, ...]
    """Where the rest of the tools come from (MCP servers), listed when a turn starts."""
    _listed: Mapping[str, tuple[JSONObject, ...]]
    """The last recorded listing of each source, by prefix: what the run offers and runs
    (replaced, never changed in place: it starts as the shared `NO_LISTINGS`)."""
    _inputs: Mapping[str, JSONObject]
    """The open round's calls whose tool asked the user: their request (and answer)."""
    _cancel_requested: bool
    _pause_requested: bool
    _depth: int
    """How many calls into the Agent are running (more than 1: one came from inside a step)."""
    _store_failed: bool
    """The store raised on a save during the current call: the run is what it holds."""
    _driven: bool
    """A turn was driven during the current call (a step ran, even with no event yet)."""
    _grouping: bool
    """A step runs on a store: events wait in a batch for `_commit`."""
    _unsaved: list[Event]
    """The batch: events not yet stored."""
    _claim_due: bool
    """A restored run is to be claimed (a save with no event) by the next commit."""
    _pipelined: bool
    """A step runs on a store that writes behind (`writes_behind`)."""
    _flight: InFlight | None
    """The save started by `_write_behind`, not taken in yet."""
    _queued: Point | None
    """The newest model call's point not in flight: the next save stores it (so a crash
    in a later save does not lose the answers the call was given)."""
    _behind: bool
    """All a crash could lose of what is not stored yet is replayable: a model call or an
    idempotent body may start with its save in flight (only ever set when pipelined)."""

    def _ungrouped(self) -> None:
        """No batch: nothing waits to be saved or delivered."""
        self._grouping = self._claim_due = self._pipelined = self._behind = False
        self._flight = self._queued = None
        if self.store is None:  # nothing is ever batched: no lists of its own
            self._unsaved = self._undelivered = NO_BATCH
        else:
            self._unsaved = []
            self._undelivered = []

    def _group(self) -> None:
        """A step begins: group commit on a store (and write-behind on one that can)."""
        store = self.store
        self._grouping = store is not None
        if store is not None and self._unsaved is NO_BATCH:  # (a store set since)
            self._unsaved = []
            self._undelivered = []
        if store is not None and self._packed:  # each save's snapshot reads the whole trace
            self._trace = list(self._entries())
            self._packed = False
            self._view = ()
        self._pipelined = store is not None and writes_behind(store)
        self._behind = False  # the call's input is stored before its first effect

    def _fresh(self) -> None:
        """A new run, in created: nothing said, nothing stored."""
        max_iterations, max_turns, input_policy = self._config
        self._data = RunData(
            self._emitter.run_id,
            max_iterations=max_iterations,
            max_turns=max_turns,
            input_policy=input_policy,
        )
        self._run: AnyMachine = run_machine(self._data, self._emitter, self._engine)
        self._loop: AnyMachine | None = None
        self._messages: tuple[Message, ...] = self._system
        self._trace: list[Kept] = []
        self._packed = False
        self._view = ()
        self._round: tuple[ToolCall, ...] = ()
        # Empty between rounds, so immutable (and shared) until a round fills them: an idle
        # run costs no containers.
        self._deferred: tuple[Message, ...] = ()
        self._decisions: Mapping[str, Decision] = NO_DECISIONS
        self._answers: tuple[Answer, ...] = ()
        self._started: tuple[str, ...] = ()
        self._inputs = NO_INPUTS
        if self._listed:
            self._listed = NO_LISTINGS
            self._offer(self._registry(self._listed))
        self._version = 0
        self._saved, self._unsure = None, False
        self._origin = None
        self._emitter.seq = 0
        self._ungrouped()

    def _restore(self, snapshot: Snapshot) -> None:
        """Become the stored run: its machines where they were, without entering a state."""
        self._data = snapshot.to_data()
        self._run = run_machine(self._data, self._emitter, self._engine)
        self._loop = (
            None
            if self._data.loop_state is None
            else loop_machine(self._data, self._emitter, self._engine)
        )
        self._messages = tuple(snapshot.messages)
        self._trace = list(snapshot.trace)
        self._packed = False
        self._view = ()
        self._deferred = tuple(snapshot.deferred)
        self._decisions = dict(snapshot.decisions)
        self._answers = tuple((answer.result, answer.message) for answer in snapshot.answers)
        self._started = tuple(snapshot.started)
        self._inputs = dict(snapshot.inputs) if snapshot.inputs else NO_INPUTS
        if self._listed or snapshot.tool_lists:
            self._listed = dict(snapshot.tool_lists)
            self._offer(self._registry(self._listed))
        self._round = open_round(self._messages)
        self._version = snapshot.version
        self._saved, self._unsure = snapshot, False
        self._origin = snapshot.origin
        self._emitter.seq = snapshot.seq
        self._ungrouped()

    def _on_event(self, event: Event) -> None:
        if self._data.loop_state is None and self._data.state == _BUSY:
            # A turn's loop enters thinking as part of the transition that starts the turn,
            # so the transition's snapshot has it (replay does the same).
            self._loop = loop_machine(self._data, self._emitter, self._engine)
        if self._grouping:
            self._unsaved.append(event)
            self._undelivered.append(event)
            return
        if self.store is not None:
            version = self._version + 1
            snapshot = self._snapshot(event.seq, version)
            try:
                self.store.save(snapshot, (event,), expected_version=self._version or None)
            except BaseException:
                self._store_failed = True
                raise
            self._version, self._saved = version, snapshot
        if self._quiet is None:  # `_deliver`, inlined: every event of a run comes here
            for listener in self._listeners:
                listener(event)
        else:
            self._deliver(event)

    async def _commit(self) -> None:
        """Before an external effect: save the batch in one transaction, then deliver it.

        Listeners told now may add to the batch (a transition of their own): that is saved
        and delivered too before this returns. On a pipelined store, the save in flight is
        awaited first, and the rest saved behind it.

        Raises:
            BaseException: What the store raised (the run is then to be reloaded: nothing of
                the batch was delivered), or what a listener raised (the batch is stored;
                what was not delivered yet waits for the settling of the step).
        """
        while self._due():
            flight, store = self._flight, self.store
            if flight is not None:
                more = store is not None and len(self._unsaved) > flight.events
                # Not begun: it and the rest, in its hop (each its own transaction).
                if more and store is not None and self._launch(store, flight.saves, into=flight):
                    continue
                await flight.future
                self._take_in(flight, tell=False)  # told once all is stored
            elif self._queued is not None and store is not None:
                queued, self._queued = self._queued, None
                if len(self._unsaved) > len(queued.save[1]):
                    self._launch(store, (queued.save,))  # one hop, two transactions
                else:
                    self._start(store, (queued.save,), queued.told)
            elif store is not None and (self._unsaved or self._claim_due):
                if self._pipelined:
                    self._launch(store)
                    continue
                told = len(self._undelivered)
                await self._save_batch(store)
                self._tell_first(told)
            else:  # (all is stored, or the store was taken away mid-step)
                self._queued = None
                self._claim_due = False
                self._tell_first(len(self._undelivered))
        self._behind = self._pipelined

    def _holds_only_starts(self) -> bool:
        """Whether all the batch holds is ``tool_started`` records (no claim either)."""
        return (
            not self._claim_due
            and self._flight is None
            and all(event.event == RecordKind.TOOL_STARTED for event in self._unsaved)
        )

    def _due(self) -> bool:
        """Whether `_commit` has anything to do: a batch or a claim waits.

        If not, the hot path skips the call (an awaited coroutine costs more than this).
        """
        return bool(self._undelivered) or self._claim_due or self._flight is not None

    async def _tell(self) -> None:
        """At a step boundary: listeners hear of what happened so far (stored first).

        A listener may ask to cancel or pause, which the boundary then takes; with no
        listener, the batch waits for the next external effect. Writing behind (`_behind`),
        the save is only started: they hear of it at the first boundary after it committed.
        """
        if self._listeners:
            if self._behind:
                self._write_behind()
            else:
                await self._commit()

    async def _save_batch(self, store: RunStore) -> None:
        events = tuple(self._unsaved)
        version = self._version + 1
        seq = events[-1].seq if events else self._emitter.seq
        snapshot = self._snapshot(seq, version)
        expected = self._version or None
        # (getattr, not isinstance: a runtime protocol check costs more than a save in memory)
        asave = getattr(store, "asave", None)
        try:
            if asave is not None:
                await asave(snapshot, events, expected_version=expected)
            else:
                store.save(snapshot, events, expected_version=expected)
        except BaseException:
            self._store_failed = True
            raise
        self._version, self._saved = version, snapshot
        self._claim_due = False
        del self._unsaved[: len(events)]

    def _flush_now(self) -> None:
        """Stop grouping: save what waits in one transaction now, then deliver it (settling)."""
        self._grouping = False
        self._queued = None  # (all that waits is saved at once, below)
        flight = self._flight
        if flight is not None:
            if flight.future.cancel() or flight.future.cancelled():
                self._flight = None  # (never begun: what it held is saved below)
            else:
                flight.future.result()  # (settling a failed step: wait for the thread here)
                self._take_in(flight, tell=False)
        if self.store is not None and self._unsaved:
            events = tuple(self._unsaved)
            version = self._version + 1
            snapshot = self._snapshot(events[-1].seq, version)
            try:
                self.store.save(snapshot, events, expected_version=self._version or None)
            except BaseException:
                self._store_failed = True
                raise
            self._version, self._saved = version, snapshot
        self._unsaved = []
        items, self._undelivered = self._undelivered, []
        for item in items:
            self._deliver(item)

    def _snapshot(self, seq: int, version: int) -> Snapshot:
        return Snapshot.from_data(
            self._data,
            self._messages,
            self._entries(),
            seq,
            version,
            deferred=self._deferred,
            decisions=self._decisions,
            answers=[
                ToolAnswer.model_construct(result=result, message=message)
                for result, message in self._answers
            ],
            started=self._started,
            origin=self._origin,
            tool_lists=self._listed,
            inputs=self._inputs,
            trusted=True,
        )

    def _registry(self, listed: Mapping[str, tuple[JSONObject, ...]]) -> ToolRegistry:
        """The application's tools and those of the sources' listings (nothing is contacted).

        Raises:
            MCPServerError: A source's tool would share a name with another tool.
            AgentFSMError: A source refuses its listing.
        """
        tools = list(self._own)
        owners = dict.fromkeys((found.name for found in tools), "the application")
        for source in self._sources:
            listing = listed.get(source.prefix)
            for found in () if listing is None else source.tools_of(listing):
                owner = owners.setdefault(found.name, f"MCP server {source.prefix!r}")
                if owner != f"MCP server {source.prefix!r}":
                    raise MCPServerError(
                        source.prefix,
                        f"its tool {found.name!r} clashes with a tool of {owner} of the same "
                        "name; give the server another prefix",
                    )
                tools.append(found)
        return ToolRegistry(tools)

    def _offer(self, registry: ToolRegistry) -> None:
        """Offer and run these tools from now on."""
        self.tools.registry = registry

    def _record_listing(self, prefix: str, listing: tuple[JSONObject, ...]) -> None:
        """Record a source's listing (already offered) as a ``tools_listed`` record."""
        self._listed = {**self._listed, prefix: listing}
        self._note(RecordKind.TOOLS_LISTED, {"server": prefix, "tools": list(listing)})

    def _claim(self) -> None:
        if self._grouping:
            self._claim_due = True  # saved by the next commit, before anything runs
            return
        if self.store is not None:
            version = self._version + 1
            snapshot = self._snapshot(self._emitter.seq, version)
            try:
                self.store.save(snapshot, (), expected_version=self._version)
            except BaseException:
                self._store_failed = True
                raise
            self._version, self._saved = version, snapshot

    def _dump(self, model: Message | ToolResult) -> JSONObject:
        """``model`` as a record's JSON, if anyone hears of records: a store or a listener.

        With neither, the record is still numbered (``seq`` stays the same either way), but
        the dump, a few µs per message, is skipped: nobody could read it.
        """
        if self.store is None and not self._listeners:
            return {}
        return message_json(model) if isinstance(model, Message) else result_json(model)

    def _note(self, kind: RecordKind, data: JSONObject) -> None:
        """Record a change to the conversation (already made) as a ``conversation`` event.

        A record is not a transition: it is numbered by the run's emitter and taken here
        directly, as `RunEmitter.emit` gives the Agent its machines' events.
        """
        state, emitter = self._data.state, self._emitter
        # `Emitter.number` and `unchecked_event`, inlined (a record is never an error event:
        # nothing to redact); a run notes several records per tool call. The event is built
        # exactly as `unchecked_event` builds it (tests pin every event of a run to it).
        emitter.seq = seq = emitter.seq + 1
        event = EventTwin()
        event.seq = seq  # (in `Event`'s field order: the keys are shared, see `twin`)
        event.run_id = emitter.run_id
        event.machine = _CONVERSATION
        event.event = kind
        event.source = event.target = state
        event.at = emitter.clock()
        event.data = data
        event.__pydantic_fields_set__ = EVENT_FIELDS
        event.__pydantic_extra__ = None
        event.__pydantic_private__ = None
        event.__class__ = Event
        if self.store is None and self._quiet is None and self._data.loop_state is not None:
            # `_on_event`, inlined for a run with no store (nothing to save, no batch, no
            # loop to make): the event goes to the listeners as it happens.
            for listener in self._listeners:
                listener(event)
        else:
            self._on_event(event)

    def _append(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self._messages += (message,)
            self._note(RecordKind.MESSAGE, {"message": self._dump(message)})

    def _defer(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self._deferred = (*self._deferred, message)
            self._note(RecordKind.DEFERRED, {"message": self._dump(message)})

    def _flush_deferred(self) -> None:
        if self._deferred:
            self._messages += self._deferred
            self._deferred = ()
            self._note(RecordKind.FLUSH_DEFERRED, {})
