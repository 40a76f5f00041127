"""The checks the simulation makes after every step, on the store itself (never its faults).

Over every stored run and tree: the log is a legal path of the machines (`check_log`, I1,
I3-I5, I8) and replays to the stored snapshot (I10, forks through their origins); message
order (I7); the pending calls of a wait (I6); iteration cap (I8); a shut-down run stays
shut down (I1); a body whose tool needs approval ran only once approved (I9); the tree's
children (I14, `assert_tree_valid`); nothing the store accepted
is undone (its log only grows, and every acknowledged save is in it); and no
non-idempotent tool body began twice (the `Ledger`, I11).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from agentfsm.errors import InvariantError, ReplayError
from agentfsm.states.events import Event
from agentfsm.states.messages import Message
from agentfsm.states.names import RunState
from agentfsm.stores.base import RunStore
from agentfsm.stores.forking import replay_run
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing.invariants import assert_history_valid, assert_tree_valid
from agentfsm.testing.sim.faults import FaultyStore
from agentfsm.testing.sim.world import Ledger
from agentfsm.verify.log_check import check_log

_WAITING = (RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED)

LeaseCheck = Callable[[RunStore, Sequence[Snapshot]], None]
"""A check of the store's run leases, given the stored runs: raises `InvariantError`."""


def _check(condition: object, invariant: str, message: str) -> None:
    if not condition:
        raise InvariantError(invariant, message)


def open_round(messages: Sequence[Message]) -> bool:
    """Whether the conversation ends with an assistant message whose calls await answers."""
    return bool(messages) and messages[-1].role == "assistant" and bool(messages[-1].tool_calls)


def check_pending(snapshot: Snapshot) -> None:
    """I6 on a stored snapshot: a wait's pending ids are unanswered calls of its last round.

    Each pending id is a call of the last assistant message with tool calls that has no
    tool message yet, or the address of a call a child run waits on (``<run>/<call>/…``).
    """
    if snapshot.state not in _WAITING:
        return
    run_id = snapshot.run_id
    _check(snapshot.pending, "I6", f"run {run_id!r} is {snapshot.state} with no pending call")
    asking = [m for m in snapshot.messages if m.role == "assistant" and m.tool_calls]
    _check(asking, "I6", f"run {run_id!r} has pending calls but no message asked for any")
    calls = [call.id for call in asking[-1].tool_calls]
    prefixes = tuple(f"{run_id}/{call_id}/" for call_id in calls)
    strays = [p for p in snapshot.pending if p not in calls and not p.startswith(prefixes)]
    _check(not strays, "I6", f"run {run_id!r}: pending {strays} are not calls of its last round")


class Checker:
    """Checks the store after each step; remembers what it saw, to see nothing undone.

    Args:
        shared: The faulty store (its ``inner`` is read; its acknowledged saves compared).
        ledger: The tools' side effects.
        roots: The root runs (not children) the simulation started or forked.
        leases: The check of run leases, when the store has them (see `lease_check`).
    """

    def __init__(
        self,
        shared: FaultyStore,
        ledger: Ledger,
        roots: Iterable[str],
        leases: LeaseCheck | None = None,
    ) -> None:
        self.shared = shared
        self.ledger = ledger
        self.roots = roots
        self.leases = leases
        self.seen: dict[str, tuple[int, tuple[Event, ...]]] = {}
        """Per run, the version and log the last check saw."""
        self.checks = 0
        """How many times `check` ran."""
        self._approvals_seen: set[str] = set()

    @property
    def store(self) -> RunStore:
        """The store, without faults."""
        return self.shared.inner

    def check(self) -> None:
        """Every check, once. Raises `InvariantError` naming the first that fails."""
        self.checks += 1
        snapshots = []
        changed = False
        for summary in self.store.list_runs():
            snapshot = self.store.load(summary.run_id)
            if snapshot is None:
                continue
            snapshots.append(snapshot)
            if self._changed(snapshot):
                changed = True
                self._check_run(snapshot)
        self._check_acknowledged()
        self._check_approvals()
        for key in self.ledger.repeated[:1]:
            _check(
                False,
                "I11",
                f"a non-idempotent tool body ran again: call {key!r} began in the processes "
                f"{self.ledger.began[key]}",
            )
        if changed:
            for root in self.roots:
                if self.store.load(root) is not None:
                    assert_tree_valid(self.store, root)
        # ---- LEASES HOOK (run leases) ----------------------------------------------------
        # "No run is busy without a lease": on when the simulated Agents take leases, that
        # is, over a store that keeps them (`LeasingProcessStore`, `lease_check`).
        if self.leases is not None:
            self.leases(self.store, snapshots)

    def _changed(self, snapshot: Snapshot) -> bool:
        before = self.seen.get(snapshot.run_id)
        return before is None or before[0] != snapshot.version

    def _check_run(self, snapshot: Snapshot) -> None:
        run_id = snapshot.run_id
        log = tuple(self.store.events(run_id))
        version, before = self.seen.get(run_id, (0, ()))
        _check(
            snapshot.version >= version and log[: len(before)] == before,
            "accepted-undone",
            f"run {run_id!r}: the store held version {version} with {len(before)} events, now "
            f"version {snapshot.version} with {len(log)}; its log was rewritten or cut",
        )
        if before and before[-1].event == "shutdown" and before[-1].machine == "run":
            _check(len(log) == len(before), "I1", f"run {run_id!r} moved after its shutdown")
        self.seen[run_id] = (snapshot.version, log)
        if snapshot.origin is None:
            result = check_log(log)
            _check(result.ok, "I3-I5", str(result))
        try:
            replay_run(self.store, run_id)
        except ReplayError as error:
            raise InvariantError("I10", str(error)) from error
        assert_history_valid(snapshot.messages, open_round=open_round(snapshot.messages))
        _check(
            snapshot.iteration <= snapshot.max_iterations,
            "I8",
            f"run {run_id!r} is at iteration {snapshot.iteration} of {snapshot.max_iterations}",
        )
        check_pending(snapshot)

    def _check_approvals(self) -> None:
        """I9: a body whose tool needs approval ran only after its run's log approved it."""
        for key in sorted(self.ledger.approved - self._approvals_seen):
            run_id, _, call_id = key.rpartition(":")
            approving = [
                event
                for event in self._history(run_id)
                if event.machine == "run" and event.event == "resolve_action"
                and _decision(event.data.get("decisions"), call_id) == "approve"
            ]  # fmt: skip
            _check(
                approving,
                "I9",
                f"the body of call {call_id!r} of run {run_id!r} ran, but its tool needs "
                "approval and the run's log approves no such call",
            )
            self._approvals_seen.add(key)

    def _history(self, run_id: str, upto: int | None = None) -> list[Event]:
        """The run's log (up to seq ``upto``), a fork's preceded by its origin's history."""
        log = [e for e in self.store.events(run_id) if upto is None or e.seq <= upto]
        stored = self.store.load(run_id)
        origin = None if stored is None else stored.origin
        if origin is None:
            return log
        return [*self._history(origin.run_id, origin.seq), *log]

    def _check_acknowledged(self) -> None:
        for run_id, (version, events) in self.shared.acknowledged.items():
            stored = self.store.load(run_id)
            stored_version = 0 if stored is None else stored.version
            log = self.store.events(run_id) if events else []
            lost = [event.seq for event in events if log[event.seq - 1 : event.seq] != [event]]
            _check(
                stored_version >= version and not lost,
                "accepted-undone",
                f"run {run_id!r}: a save of version {version} was acknowledged, the store "
                f"holds version {stored_version}; acknowledged events missing: {lost[:5]}",
            )

    def check_at_rest(self) -> None:
        """At the end, once every run was taken up: no run is left busy (I12)."""
        for summary in self.store.list_runs():
            _check(
                summary.state != RunState.BUSY,
                "I12",
                f"run {summary.run_id!r} is left busy after every run was taken up",
            )


def _decision(decisions: object, call_id: str) -> object:
    """The kind of the decision ``decisions`` (a ``resolve_action``'s) gives ``call_id``."""
    if not isinstance(decisions, dict):
        return None
    decision = decisions.get(call_id)
    return decision.get("kind") if isinstance(decision, dict) else None


def lease_check(store: RunStore, *, agents_lease: bool = True) -> LeaseCheck | None:
    """The check "no run is busy without a lease", if ``store`` keeps leases.

    LEASES HOOK. A run is busy in the store only with the lease of the process that made it
    busy (`agentfsm.stores.leases`); a crashed process's lease stays, expired, until a
    takeover, so the check asks for a lease, not a live one.

    Args:
        store: The shared store.
        agents_lease: Whether the simulated Agents take leases (the `Simulation` passes
            whether ``store`` keeps them: its processes then reach it through a
            `LeasingProcessStore`); False turns the check off.

    Returns:
        The check, or None when it is off.
    """
    lease = getattr(store, "lease", None)
    if not agents_lease or not callable(lease):
        return None

    def check(store: RunStore, snapshots: Sequence[Snapshot]) -> None:
        for snapshot in snapshots:
            if snapshot.state == RunState.BUSY:
                _check(
                    lease(snapshot.run_id) is not None,
                    "leases",
                    f"run {snapshot.run_id!r} is busy without a lease",
                )

    return check
