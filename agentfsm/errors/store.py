"""Errors of run stores, replay and forks."""

from __future__ import annotations

from agentfsm.errors._base import AgentFSMError


class StoreError(AgentFSMError):
    """A run store refused or failed an operation; what was stored before is unchanged."""


class SnapshotConflictError(StoreError):
    """A save expected another stored version of the run (optimistic concurrency).

    Another writer saved the run since ``expected`` was read (or the run already exists,
    or no longer does). Nothing was written: reload the run and decide again.

    Attributes:
        run_id: The run that was saved.
        expected: The version the save expected (None: the run must not exist yet).
        actual: The version stored (None: there is no such run).
    """

    def __init__(self, run_id: str, expected: int | None, actual: int | None) -> None:
        self.run_id = run_id
        self.expected = expected
        self.actual = actual
        want = "no stored run" if expected is None else f"version {expected}"
        have = "none is stored" if actual is None else f"version {actual} is stored"
        super().__init__(
            f"cannot save run {run_id!r}: the save expected {want} but {have}; nothing was "
            "written (load the run again and retry with its version)"
        )


class RunBusyError(StoreError):
    """Another process (or another Agent) drives the run now: its lease on the run is live.

    The run is busy and its driver renews its lease while it works; nothing was written. A
    crashed driver's lease expires ``expires_at`` and the run can then be taken over (the
    takeover is recorded in its log).

    Attributes:
        run_id: The run that is busy.
        owner: Who holds its lease (the driver's owner id).
        expires_at: When the lease expires unless renewed (seconds since the epoch).
    """

    def __init__(self, run_id: str, owner: str, expires_at: float) -> None:
        self.run_id = run_id
        self.owner = owner
        self.expires_at = expires_at
        super().__init__(
            f"run {run_id!r} is busy: {owner!r} drives it, and its lease runs until "
            f"{expires_at:.3f} (seconds since the epoch); nothing was written. Wait until the "
            "run is at rest and load it again, or pass Agent(lease=LeasePolicy(wait=seconds)) "
            "to wait for it; a crashed driver's run is taken over once its lease expires"
        )


class InvalidSaveError(StoreError):
    """A save whose snapshot and events do not continue the stored run; nothing was written.

    For example the first new event's ``seq`` is not the stored ``seq + 1``, the events are
    not contiguous, belong to another run, or the snapshot's ``seq`` or ``version`` do not
    follow from them.

    Attributes:
        run_id: The run that was saved.
        problem: What does not fit, and what was expected.
    """

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"cannot save run {run_id!r}: {problem}; nothing was written")


class RunNotFoundError(StoreError, LookupError):
    """A run to restore is not in the store; nothing was created or written.

    `Agent.restore` takes up a stored run and never starts a new one: a run id that names no
    stored run is this error, not a fresh run under that id.

    Attributes:
        run_id: The run asked for.
        store: The store's ``repr``, to say where it was looked for.
    """

    def __init__(self, run_id: str, store: str) -> None:
        self.run_id = run_id
        self.store = store
        super().__init__(
            f"no run {run_id!r} in {store}: nothing to restore (check the run id and the "
            "store; to start a new run under this id, use Agent(..., run_id=..., store=...))"
        )


class StoreWriteError(StoreError):
    """The database failed a save (disk full, I/O error, locked too long, no answer).

    Usually the transaction was rolled back: the previous snapshot and events still load.
    When the store cannot know (``outcome_known`` False: a server that did not answer may
    still commit the save when it wakes), the message says so: read the run again before
    going on (an Agent does, at its next call into the run). The database's own exception
    is the ``__cause__``.

    Attributes:
        run_id: The run that was saved.
        path: The store's file.
        detail: What the database reported.
        outcome_known: False when the save may have been stored all the same.
    """

    def __init__(self, run_id: str, path: str, detail: str, *, outcome_known: bool = True) -> None:
        self.run_id = run_id
        self.path = path
        self.detail = detail
        self.outcome_known = outcome_known
        if outcome_known:
            what = "the transaction was rolled back and the previous snapshot is intact"
        else:
            what = (
                "whether it was stored is unknown (the server may still commit it): read "
                "the run again before going on"
            )
        super().__init__(f"cannot save run {run_id!r} to {path!r}: {detail}; {what}")


class StoreCorruptError(StoreError):
    """The store's file, or a record in it, cannot be read as agentfsm's run database.

    Nothing was written to it. The database's own exception, if any, is the ``__cause__``.

    Attributes:
        path: The store's file.
        detail: What is wrong, and what was expected.
        run_id: The run whose record is unreadable, or None for the whole file.
    """

    def __init__(self, path: str, detail: str, run_id: str | None = None) -> None:
        self.path = path
        self.detail = detail
        self.run_id = run_id
        where = f"run {run_id!r} in {path!r}" if run_id is not None else f"{path!r}"
        super().__init__(f"cannot read {where}: {detail}; nothing was overwritten")


class SchemaVersionError(StoreError):
    """A stored snapshot, or the store's file, has a schema version this agentfsm cannot read.

    It was written by another (probably newer) agentfsm; nothing was overwritten.

    Attributes:
        path: The store's file.
        run_id: The run whose snapshot has that version, or None for the file's format.
        found: The schema version found.
        expected: The schema versions this agentfsm reads.
    """

    def __init__(
        self, path: str, run_id: str | None, found: int, expected: tuple[int, ...]
    ) -> None:
        self.path = path
        self.run_id = run_id
        self.found = found
        self.expected = expected
        what = f"the snapshot of run {run_id!r}" if run_id is not None else "the file format"
        readable = ", ".join(str(v) for v in expected)
        older = bool(expected) and found < min(expected)
        advice = (
            "it was written by an older agentfsm: read it with that version, or start a new store"
            if older
            else "upgrade agentfsm to read it"
        )
        super().__init__(
            f"{what} in {path!r} has schema version {found}, but this agentfsm reads only "
            f"{readable}; {advice} (nothing was overwritten)"
        )


class StoreURLError(StoreError, ValueError):
    """A store URL (``open_store``, a CLI's ``--store``) that names no store agentfsm can open.

    Nothing was opened or created.

    Attributes:
        url: The URL given, its password (if any) already replaced by ``***`` by the caller.
        problem: What is wrong with it.
        allowed: The URL forms accepted.
    """

    def __init__(self, url: str, problem: str, allowed: tuple[str, ...]) -> None:
        self.url = url
        self.problem = problem
        self.allowed = allowed
        super().__init__(
            f"cannot open the store {self.url!r}: {problem}; a store is named by "
            f"{', '.join(allowed)}… or a plain path to a SQLite file"
        )


class ReplayError(AgentFSMError):
    """An event log cannot be replayed into a run: it is not one an Agent recorded.

    A gap or repeat in ``seq``, an event of another run, a transition the machines do not
    take from where the replay is, a record whose data is not what its kind carries: the
    first such event is named.

    Attributes:
        run_id: The run the log is of.
        seq: The ``seq`` of the first event that does not fit (0 for an empty log).
        problem: What does not fit, and what was expected.
    """

    def __init__(self, run_id: str, seq: int, problem: str) -> None:
        self.run_id = run_id
        self.seq = seq
        self.problem = problem
        super().__init__(f"cannot replay run {run_id!r} at event {seq}: {problem}")


class ForkError(AgentFSMError, ValueError):
    """A run cannot be forked as asked; nothing was stored.

    No such run, a ``seq`` outside its log or before its first rest point, or an edit that
    does not fit the run at the fork point (no user message to replace, a call that is not
    pending, a message that would break the conversation's order).

    Attributes:
        run_id: The run that was to be forked.
        problem: What is wrong, with what was given and what is allowed.
    """

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"cannot fork run {run_id!r}: {problem}")
