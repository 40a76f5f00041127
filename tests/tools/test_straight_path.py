"""The straight-line call path (`ToolSystem._answer`) answers exactly as the general one.

A differential property test runs each generated round twice, on the same tools, once with
the straight-line path and once with it turned off (``_straight = False``: every call takes
the checks one by one), and compares everything anyone can see: the results (durations
included, from a timer that counts its calls), the messages, what each body was given, what
the observer, the hooks, ``on_start`` and ``on_answer`` were told, and in which order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools import (
    ArgumentLimits,
    Decision,
    HookContext,
    HookKind,
    Hooks,
    Tool,
    ToolContext,
    ToolObservation,
    ToolPolicy,
    ToolResult,
    ToolSystem,
)
from agentfsm.tools.arguments import ArgumentParser
from agentfsm.tools.execution import Attempted
from agentfsm.tools.schema import Signature

CONTEXT = ToolContext(run_id="run-s", turn=1, iteration=2)
NAMES = ("alpha", "beta", "gamma")
SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city"],
    "additionalProperties": False,
}
OUTPUTS: dict[str, object] = {
    "text": "sunny",
    "object": {"sky": "clear", "days": [1, 2]},
    "number": 3,
    "none": None,
    "not_json": {1, 2},
}
"""What a body may return, by name (``raise`` and ``tried`` are the bodies that fail)."""


@dataclass(frozen=True)
class Spec:
    """One generated tool."""

    name: str
    output: str
    is_async: bool
    explicit: bool
    context: bool
    policy: ToolPolicy
    client_side: bool
    idempotent: bool
    timeout: float | None


class Log:
    """Everything told or given during one round, in order."""

    def __init__(self) -> None:
        self.items: list[object] = []

    def body(self, name: str, kwargs: dict[str, object]) -> object:
        context = kwargs.get("context")
        given = {k: v for k, v in kwargs.items() if k != "context"}
        seen = None if context is None else repr(context)
        self.items.append(("body", name, given, seen))
        return None


def make_tool(spec: Spec, log: Log) -> Tool[..., object]:
    """A tool as ``spec`` says, whose body logs what it is given and returns its output."""

    def outcome() -> object:
        if spec.output == "raise":
            raise ValueError("the body failed")
        return OUTPUTS[spec.output]

    def plain(city: str, days: int = 1) -> object:
        log.body(spec.name, {"city": city, "days": days})
        return outcome()

    def with_context(city: str, days: int = 1, context: ToolContext | None = None) -> object:
        log.body(spec.name, {"city": city, "days": days, "context": context})
        return outcome()

    async def plain_async(city: str, days: int = 1) -> object:
        await asyncio.sleep(0)
        return plain(city, days)

    async def with_context_async(
        city: str, days: int = 1, context: ToolContext | None = None
    ) -> object:
        await asyncio.sleep(0)
        return with_context(city, days, context)

    bodies: dict[tuple[bool, bool], Callable[..., object]] = {
        (False, False): plain,
        (False, True): with_context,
        (True, False): plain_async,
        (True, True): with_context_async,
    }
    body = bodies[spec.is_async, spec.context]
    return Tool(
        None if spec.client_side and spec.output == "none" else body,
        name=spec.name,
        description="A tool.",
        parameters=SCHEMA if spec.explicit else None,
        policy=spec.policy,
        client_side=spec.client_side,
        idempotent=spec.idempotent,
        timeout=spec.timeout,
        retry_on=(ValueError,) if spec.idempotent else (),
    )


unusual_specs = st.builds(
    Spec,
    name=st.sampled_from(NAMES),
    output=st.sampled_from(["text", "raise", *OUTPUTS, "raise"]),
    is_async=st.booleans(),
    explicit=st.booleans(),
    context=st.booleans(),
    policy=st.sampled_from(ToolPolicy),
    client_side=st.booleans(),
    idempotent=st.booleans(),
    timeout=st.sampled_from([None, 5.0]),
)
usual_specs = st.builds(
    Spec,
    name=st.sampled_from(NAMES),
    output=st.sampled_from(["text", "raise", *OUTPUTS, "raise"]),
    is_async=st.booleans(),
    explicit=st.booleans(),
    context=st.just(False),
    policy=st.just(ToolPolicy.ALLOW),
    client_side=st.just(False),
    idempotent=st.just(False),
    timeout=st.just(None),
)
specs = st.one_of(usual_specs, usual_specs, unusual_specs)
"""Tools, mostly the usual kind (which takes the straight path), so that most calls compare
the two paths."""

valid_arguments = st.fixed_dictionaries(
    {"city": st.text(min_size=1, max_size=6)}, optional={"days": st.integers(1, 14)}
).map(json.dumps)
argument_texts = st.one_of(
    valid_arguments,
    valid_arguments,
    st.sampled_from(
        [
            '{"city": ""}',
            '{"days": 3}',
            '{"city": "Oslo", "days": 0}',
            '{"city": "Oslo", "days": "two"}',
            '{"city": "Oslo", "extra": true}',
            '{"city": "Oslo"',
            '{"city": NaN}',
            '{"city": "Oslo"} ',
            '{"city": "Oslo", "days": 99999999999999999999999}',
            "[]",
            "null",
            "",
            "  ",
            "{",
            '{"city": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}',
        ]
    ),
)

DECISIONS = st.sampled_from(
    [None, None, None, Decision.approve(), Decision.deny("no"), Decision.output("from the app")]
)


@dataclass(frozen=True)
class Case:
    """One generated round and the system around it."""

    specs: tuple[Spec, ...]
    calls: tuple[ToolCall, ...]
    decisions: dict[str, Decision]
    enabled: frozenset[str] | None
    hooks: frozenset[HookKind]
    observed: bool
    on_start: str
    answered: bool
    max_attempts: int
    delegated: frozenset[str]


HOOKS = st.frozensets(
    st.sampled_from([HookKind.BEFORE_EACH_TOOL, HookKind.AFTER_EACH_TOOL, HookKind.ON_ERROR])
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    # Half the rounds are usual (no decision, observer, enablement or delegate), so that
    # their calls to usual tools take the straight path; the others mix everything.
    usual = draw(st.sampled_from([True, False]))
    drawn = draw(st.lists(specs, min_size=1, max_size=3, unique_by=lambda spec: spec.name))
    registered = tuple(spec.name for spec in drawn)
    calls = tuple(
        ToolCall(
            id=f"call-{index}",
            name=draw(st.sampled_from((*registered, *NAMES, "ghost"))),
            arguments=draw(argument_texts),
        )
        for index in range(draw(st.integers(0, 5)))
    )
    decisions = {}
    for call in calls:
        decision = None if usual else draw(DECISIONS)
        if decision is not None:
            decisions[call.id] = decision
    enabled = st.none() | st.frozensets(st.sampled_from((*NAMES, "ghost")))
    delegated = st.frozensets(st.sampled_from(NAMES), max_size=1)
    return Case(
        specs=tuple(drawn),
        calls=calls,
        decisions=decisions,
        enabled=None if usual else draw(enabled),
        hooks=draw(HOOKS),
        observed=False if usual else draw(st.booleans()),
        on_start=draw(st.sampled_from(["none", "told", "awaited"])),
        answered=draw(st.booleans()),
        max_attempts=draw(st.sampled_from([1, 3])),
        delegated=frozenset() if usual else draw(delegated),
    )


class General(ToolSystem):
    """A `ToolSystem` whose every call takes the general path."""

    __slots__ = ()
    _straight = False


async def _no_sleep(seconds: float) -> None:
    await asyncio.sleep(0)


def run(case: Case, straight: bool) -> list[object]:
    """Everything seen of ``case``'s round, on the straight-line path or the general one."""
    log = Log()
    ticks = [0.0]

    def timer() -> float:
        ticks[0] += 1.0
        return ticks[0]

    hooks = Hooks()
    for kind in case.hooks:

        def handler(context: HookContext, kind: HookKind = kind) -> None:
            call = context.pending_tool
            error = context.error
            log.items.append(("hook", kind, None if call is None else call.id, error))

        hooks.add(kind, handler)

    def observer(observation: ToolObservation) -> None:
        log.items.append(("observed", observation.model_dump()))

    def on_start(call: ToolCall) -> Awaitable[None] | None:
        log.items.append(("start", call.id))
        return asyncio.sleep(0) if case.on_start == "awaited" else None

    def on_answer(result: ToolResult, message: Message) -> None:
        log.items.append(("answer", result.model_dump(), message.model_dump()))

    async def delegate(call: ToolCall, kwargs: dict[str, object]) -> Attempted | None:
        log.items.append(("delegated", call.id, kwargs))
        return Attempted("from a child", None, 1)

    system = (ToolSystem if straight else General)(
        [make_tool(spec, log) for spec in case.specs],
        hooks=hooks,
        observer=observer if case.observed else None,
        max_attempts=case.max_attempts,
        sleep=_no_sleep,
        timer=timer,
        clock=lambda: 1_700_000_000.0,
        limits=ArgumentLimits(max_chars=200, max_depth=32),
    )
    outcome = asyncio.run(
        system.run_round(
            case.calls,
            CONTEXT,
            decisions=case.decisions,
            enabled=case.enabled,
            on_start=None if case.on_start == "none" else on_start,
            on_answer=on_answer if case.answered else None,
            delegates=dict.fromkeys(case.delegated, delegate) or None,
        )
    )
    return [
        [result.model_dump() for result in outcome.results],
        [message.model_dump() for message in outcome.messages],
        log.items,
    ]


@given(cases())
def test_the_straight_path_answers_every_round_as_the_general_path_does(case: Case) -> None:
    assert run(case, straight=True) == run(case, straight=False)


CHECKED: list[str] = []
"""The calls `Watched` sent down the general path."""


class Watched(ToolSystem):
    """A `ToolSystem` that notes which calls take the general path."""

    __slots__ = ()

    def _checked(self, index: int, call: ToolCall, round_: Any, started: float) -> Any:
        CHECKED.append(call.id)
        return super()._checked(index, call, round_, started)


def test_the_usual_call_takes_the_straight_path_and_any_other_the_general_one() -> None:
    """So that the differential test compares two paths, not one path with itself."""
    log = Log()
    spec = Spec("alpha", "text", False, True, False, ToolPolicy.ALLOW, False, False, None)
    context = Spec("beta", "text", False, True, True, ToolPolicy.ALLOW, False, False, None)

    class Subclassed(Tool[..., object]):
        __slots__ = ()

    def gamma(city: str, days: int = 1) -> str:
        """Answer."""
        return city

    system = Watched(
        [make_tool(spec, log), make_tool(context, log), Subclassed(gamma, parameters=SCHEMA)]
    )
    calls = [
        ToolCall(id="subclassed", name="gamma", arguments='{"city": "Oslo"}'),
        ToolCall(id="usual", name="alpha", arguments='{"city": "Oslo"}'),
        ToolCall(id="ghost", name="ghost", arguments="{}"),
        ToolCall(id="context", name="beta", arguments='{"city": "Oslo"}'),
        ToolCall(id="invalid", name="alpha", arguments='{"city": ""}'),
    ]
    CHECKED.clear()
    outcome = system.run_round_sync(calls, CONTEXT)
    assert CHECKED == ["subclassed", "ghost", "context"]
    assert [r.status for r in outcome.results] == [
        "success",
        "success",
        "not_found",
        "success",
        "invalid_arguments",
    ]


@given(argument_texts)
def test_plain_gives_what_parse_gives_or_leaves_the_text_to_it(text: str) -> None:
    limits = ArgumentLimits(max_chars=200, max_depth=32)
    parser = ArgumentParser("alpha", Signature(SCHEMA, None, (), None))
    plain = parser.plain(text, limits)
    if plain is not None:
        assert plain == parser.parse("c", text, limits)


def test_plain_leaves_a_tool_with_an_arguments_model_to_parse() -> None:
    def forecast(city: str) -> str:
        """Forecast."""
        return city

    parser = Tool(forecast).arguments
    assert parser.plain('{"city": "Oslo"}', ArgumentLimits()) is None
    assert parser.parse("c", '{"city": "Oslo"}', ArgumentLimits()) == {"city": "Oslo"}


def test_a_round_built_without_its_constructor_is_the_one_its_constructor_builds() -> None:
    """`run_checked_round` builds its `Round` by ``tuple.__new__`` with every field, in order."""
    from agentfsm.tools import answers, system

    values: Any = (CONTEXT, {}, None, False, None, None, None, None, None)
    built = system._new_tuple(answers.Round, values)
    assert type(built) is answers.Round
    assert built == answers.Round(*values)
    assert answers.Round._fields == (
        "context",
        "decisions",
        "enabled",
        "hooked",
        "on_start",
        "resumes",
        "delegates",
        "on_input",
        "on_show",
    )
