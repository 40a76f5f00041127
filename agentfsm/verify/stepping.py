"""One step from a configuration, sent through the compiled machine, and the checks on it.

Each step is one move (an event, its arguments, the environment) sent from one explored
configuration: its guards are asked (and the spec's, for conformance), then the event is
sent; refused, it must change nothing (I4); taken, the machine must take the edge the
guards chose (determinism), leave shutdown alone (I1), count turns right (I5) and do to the
data what the effect table says (effects), also from the data with the fields no
configuration holds loaded (`loaded.LOADS`). A guard, effect or enter action that raises is
an `exceptions` violation.

Every read of the data by a guard, effect or enter action goes through `Traced`: what the
step read, and wrote, is what its outcome depends on (`memo`), and what `vacuity` checks.
"""

from __future__ import annotations

from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm.compiled import CompiledTransition, Machine
from agentfsm.fsm.data import RunData
from agentfsm.fsm.emitter import Emitter
from agentfsm.states.effects import Postcondition
from agentfsm.states.names import RunEvent
from agentfsm.verify.configurations import Configurations, Record, Snapshot
from agentfsm.verify.graph import Reads, Side, Traced, traced_effects
from agentfsm.verify.loaded import Load, shown
from agentfsm.verify.steps import (
    changes,
    effect_mismatch,
    expected,
    nonconformance,
    overlap,
    turn_miscount,
)


class Stepping(Configurations):
    """Takes steps from configurations, checking each; `Explorer` chooses which."""

    emitter: Emitter
    _loads: tuple[tuple[str, Load], ...]
    sends: int

    def __init__(self) -> None:
        super().__init__()
        self.depends: set[str] = set()
        """The fields the current step's outcome depends on besides what its guards and
        effects read: what it wrote, what the effect table names for it, the loaded ones."""
        self.records: list[Record] = []
        """What the current step's guards and effects read (and wrote), for `vacuity`."""
        self.delta: tuple[tuple[str, object], ...] | None = None
        """The fields the current step changed, with their new values (None: refused)."""

    def _record(self, kind: str, t: CompiledTransition, side: Side, reads: Reads) -> None:
        key = (kind, side.name.value, t.event, t.source, t.target)
        self.records.append((key, reads, None))

    def take_step(
        self,
        nid: int,
        side: Side,
        mid: int,
        candidates: tuple[CompiledTransition, ...],
        data: RunData,
    ) -> set[str]:
        """Take one move from a node; returns the fields its guards and effects read.

        ``data`` is the node's, with the move's environment set. Clears and fills
        `depends`, `records` and `delta`, and sets `dirty` when a violation shows.
        """
        self.depends.clear()
        self.records.clear()
        self.delta, self.dirty = None, False
        before = self.snapshot(data)
        names: set[str] = set()
        enabled = self._enabled(nid, mid, side, candidates, data, names)
        source = getattr(data, side.compiled.state_field)
        spec = self._spec_choice(nid, mid, side, source, data, names)
        if self.snapshot(data) != before:
            # A guard wrote to the data. The node must stay as it was reached; whether the
            # write breaks I4 shows when the event is sent (refused, it must change nothing).
            self.restore(data, before)
            self.dirty = True
        if enabled is None:
            return names
        self._conformance(nid, mid, side, source, enabled, spec)
        if len(enabled) > 1:
            self._overlap(nid, mid, enabled)
        if not enabled:
            self._refuse(nid, side, mid, data, before)
        else:
            self._take(nid, side, mid, enabled[0], data, names)
        return names

    def _enabled(
        self,
        nid: int,
        mid: int,
        side: Side,
        candidates: tuple[CompiledTransition, ...],
        data: RunData,
        names: set[str],
    ) -> list[CompiledTransition] | None:
        """The candidates whose guards hold; None when a guard raised (a violation)."""
        args = self.moves[mid].arguments
        enabled = []
        for t in candidates:
            reads: Reads = {}
            model = Traced(data, reads)
            holds, current = True, ""
            try:
                for guard, name in zip(t.guards, t.guard_names, strict=True):
                    current = name
                    holds = bool(guard(model, **args))
                    if not holds:
                        break
            except Exception as error:  # a raising guard is a finding
                what = f"guard {current} of {t.event!r} {t.source} → {t.target}"
                self._raised(nid, mid, what, error)
                return None
            finally:
                self._record("guard", t, side, reads)
                names.update(reads)
            if holds:
                enabled.append(t)
        return enabled

    def _spec_choice(
        self, nid: int, mid: int, side: Side, source: str, data: RunData, names: set[str]
    ) -> tuple[str, str | None] | None:
        """The spec's first row for this step whose guard holds: (target, guard name)."""
        move = self.moves[mid]
        reads: Reads = {}
        model = Traced(data, reads)
        try:
            for target, name, guard in side.spec.get((source, move.event), ()):
                if guard is None or guard(model, **move.arguments):
                    return target, name
        except Exception as error:  # so is a raising spec guard
            self._raised(nid, mid, f"the spec's guard for {move.event!r} from {source}", error)
        finally:
            names.update(reads)
        return None

    def _conformance(
        self,
        nid: int,
        mid: int,
        side: Side,
        source: str,
        enabled: list[CompiledTransition],
        spec: tuple[str, str | None] | None,
    ) -> None:
        """Two-way: the machine takes exactly the edge the spec's first holding row names.

        The contract is closed: between two states it knows, an edge of an event it does not
        know is an extra row too. Only edges from or to an extension's own states are free.
        """
        event = self.moves[mid].event
        took = enabled[0].target if enabled else None
        governed = (source, event) in side.spec
        if not governed and source not in side.spec_states:
            return  # a state the spec does not know: an extension's
        known = event in side.spec_events
        if not governed and not known and took not in side.spec_states:
            return  # an extension's event, refused here or into an extension's state
        message = nonconformance(event, source, took, spec, governed=governed, known=known)
        if message is not None:
            self._violate("conformance", nid, mid, took, message)

    def _overlap(self, nid: int, mid: int, enabled: list[CompiledTransition]) -> None:
        message = overlap(self.moves[mid].event, enabled)
        self._violate("determinism", nid, mid, enabled[0].target, message)

    def _refuse(
        self, nid: int, side: Side, mid: int, data: RunData, before: Snapshot | None = None
    ) -> None:
        move = self.moves[mid]
        state = getattr(data, side.compiled.state_field)
        before = self.snapshot(data) if before is None else before
        self._replica(side, mid, data)
        seq = self.emitter.seq
        self.sends += 1
        try:
            Machine(side.compiled, data, self.emitter).send(move.event, **move.arguments)
        except Exception as error:
            if not isinstance(error, IllegalTransitionError):
                self.restore(data, before)
                self.emitter.seq = seq
                self._raised(nid, mid, f"refusing {move.event!r} in {state!r}", error)
                return
            changed = self.snapshot(data) != before or self.emitter.seq != seq
            allowed = side.compiled.allowed.get(state, ())
            named = (error.state, error.event, error.allowed) == (state, move.event, allowed)
            if changed or not named:
                what = changes(self._fields, before, data) if changed else f"named {error.state!r}"
                self.restore(data, before)
                self.emitter.seq = seq
                self._violate("I4", nid, mid, None, f"refusing {move.event!r} {what}")
            return
        outcome = getattr(data, side.compiled.state_field)
        self.restore(data, before)
        self.emitter.seq = seq
        message = f"{move.event!r} was accepted in {state!r} though no transition was enabled"
        self._violate("I4", nid, mid, outcome, message)

    def _take(
        self,
        nid: int,
        side: Side,
        mid: int,
        chosen: CompiledTransition,
        data: RunData,
        names: set[str],
    ) -> None:
        move = self.moves[mid]
        source = getattr(data, side.compiled.state_field)
        self._replica(side, mid, data, enter_loop=True)
        work = self.copy(data)
        self.sends += 1
        try:
            emitted = Machine(side.compiled, work, self.emitter).send(move.event, **move.arguments)
        except IllegalTransitionError:
            message = (
                f"the machine refused {move.event!r} though {chosen.target!r} was enabled a "
                "moment before: a guard's answer changed between two identical calls"
            )
            self._violate("determinism", nid, mid, None, message)
            return
        except Exception as error:  # and a raising effect
            what = f"an effect of {move.event!r} {source} → {chosen.target}"
            self._raised(nid, mid, what, error)
            return
        if chosen.effects or chosen.enters:
            names.update(self._trace_effects(side, mid, chosen, data))
        if emitted.target != chosen.target:
            message = (
                f"the machine took {source!r} → {emitted.target!r}, though the first "
                f"enabled transition goes to {chosen.target!r}"
            )
            self._violate("determinism", nid, mid, emitted.target, message)
        self._after(nid, side, mid, source, data, work, acts=bool(chosen.effects or chosen.enters))
        if self._starts_loop(side, work):
            try:
                Machine(self.loop.compiled, work, self.emitter)  # the turn's loop starts
            except Exception as error:  # or enter action
                self._raised(nid, mid, "entering the loop's initial state", error)
                return
        self.delta = tuple(
            (name, new)
            for name, new, old in zip(
                self._fields, self.snapshot(work), self.snapshot(data), strict=True
            )
            if new is not old
        )
        self._arrive(nid, mid, work)

    def _starts_loop(self, side: Side, work: RunData) -> bool:
        """Whether a run step into a turn state, with no loop yet, starts the turn's loop."""
        # The state first: the loop's is read (and so depended on) only by a step into a
        # turn state.
        return (
            side is self.run and work.state in self.domains.turn_states and work.loop_state is None
        )

    def _replica(self, side: Side, mid: int, data: RunData, *, enter_loop: bool = False) -> None:
        """Send the step once more, on a traced copy of ``data``, to learn what it reads.

        What it reads and writes (and, with ``enter_loop``, what a loop it starts reads)
        goes into `depends`. The checks look at the real send, on the data itself, as a
        run would; this copy only tells the memo what the outcome depends on. Its outcome is
        the real send's business; a step on which the copy raised is never replayed.
        """
        move = self.moves[mid]
        reads: Reads = {}
        model = Traced(self.copy(data), reads, self.depends)
        seq = self.emitter.seq
        try:
            Machine(side.compiled, model, self.emitter).send(move.event, **move.arguments)
            if enter_loop and self._starts_loop(side, model):  # type: ignore[arg-type]
                Machine(self.loop.compiled, model, self.emitter)
        except IllegalTransitionError:
            pass  # refused: what its guards read is what the refusal depends on
        except Exception:  # the real send reports it; a step this raised on is not replayed
            self.dirty = True
        finally:
            self.emitter.seq = seq
            self.depends.update(reads)

    def _trace_effects(
        self, side: Side, mid: int, chosen: CompiledTransition, data: RunData
    ) -> set[str]:
        """Run the step's effects and enter actions again, on a copy, to see what they read."""
        field = side.compiled.state_field
        reads, writes = traced_effects(chosen, self.copy(data), field, self.moves[mid].arguments)
        key = ("effect", side.name.value, chosen.event, chosen.source, chosen.target)
        self.records.append((key, reads, writes))
        return set(reads)

    def _after(
        self,
        nid: int,
        side: Side,
        mid: int,
        source: str,
        data: RunData,
        work: RunData,
        *,
        acts: bool = True,
    ) -> None:
        """The checks on a step's outcome: I1, I5 and the effects' postconditions."""
        move = self.moves[mid]
        target = getattr(work, side.compiled.state_field)
        is_run = side is self.run
        if is_run and source in self.domains.absorbing:
            message = f"{source!r} accepted {move.event!r} (to {target!r})"
            self._violate("I1", nid, mid, target, message)
        turns = self.domains.turn_states
        starts = is_run and move.event == RunEvent.SUBMIT and source not in turns
        miscount = turn_miscount(move.event, data.turn, work.turn, starts and target in turns)
        if miscount is not None:
            self._violate("I5", nid, mid, target, miscount)
        if (source, move.event) not in side.spec:
            return  # an edge the spec does not govern: its effects are the extension's own
        posts = side.effects.get((source, move.event), ())
        self.depends.update(side.effect_fields.get((source, move.event), ()))
        wanted = expected(posts, move.event, source, target, data, move.arguments)
        fields = [f for f in self._fields if f != side.compiled.state_field]
        wrong = effect_mismatch(fields, data, work, wanted)
        if wrong is not None:
            message = f"{move.event!r} {source} → {target} left {wrong}"
            self._violate("effects", nid, mid, target, message)
        elif acts and self._loads:  # a step with no action changes nothing
            self._loaded(nid, side, mid, source, target, data, posts, fields)

    def _loaded(
        self,
        nid: int,
        side: Side,
        mid: int,
        source: str,
        target: str,
        data: RunData,
        posts: tuple[Postcondition, ...],
        fields: list[str],
    ) -> None:
        """The step again, with the fields outside the configuration loaded (`LOADS`).

        A configuration holds no queued input, question, reason or cancellation request (no
        guard reads them: `varied`), so the step from it cannot show an effect that loses
        or rewrites one. Taken again with each holding a value, it must change them only as
        the effect table says. A step that the loaded fields turn another way or refuse is
        left to `varied` (a guard read them); one that then raises is an exception. The
        counterexample names what was loaded (`Counterexample.loaded`).
        """
        move = self.moves[mid]
        before = self.copy(data)
        for name, load in self._loads:
            self.depends.add(name)
            setattr(before, name, load(getattr(before, name)))
        self._replica(side, mid, before)
        work = self.copy(before)
        seq = self.emitter.seq
        try:  # the arguments passed `send`'s check when the step was first taken
            Machine(side.compiled, work, self.emitter).send_trusted(
                move.event, dict(move.arguments)
            )
        except IllegalTransitionError:
            return
        except Exception as error:
            loaded, text = shown(before, self._loads)
            message = (
                f"an effect of {move.event!r} {source} → {target}, from data also holding "
                f"{text}, raised {type(error).__name__}: {error}"
            )
            self._violate("exceptions", nid, mid, None, message, loaded)
            return
        finally:
            self.emitter.seq = seq
        if getattr(work, side.compiled.state_field) != target:
            return
        wanted = expected(posts, move.event, source, target, before, move.arguments)
        wrong = effect_mismatch(fields, before, work, wanted)
        if wrong is not None:
            loaded, text = shown(before, self._loads)
            message = (
                f"{move.event!r} {source} → {target}, from data also holding {text}, left {wrong}"
            )
            self._violate("effects", nid, mid, target, message, loaded)
