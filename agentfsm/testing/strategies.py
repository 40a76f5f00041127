"""Hypothesis strategies for testing agents: model responses, tool calls, decisions, events.

The tool-call strategies read the tools' own JSON Schemas, so the calls they make fit the
agent under test: valid arguments generated from the schema, arguments that break it
(a missing required property, a value of the wrong type, an unexpected property, JSON that
is not an object), malformed JSON, and calls to tools that do not exist. Whether a given
argument text is valid is always decided by the tool's validator, never assumed here.

Needs hypothesis (the ``testing`` extra)::

    from agentfsm.testing.strategies import model_responses
    responses = model_responses(agent.tools.registry)
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Sequence

from hypothesis import strategies as st

from agentfsm.errors import ModelCallError, ModelError, ModelResponseError
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.states.tables import MachineTable
from agentfsm.tools.policy import Decision
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.schema import compile_validator

ModelStep = ModelResponse | ModelError
"""One model call's outcome: a response, or the error the call raises."""

Send = tuple[str, dict[str, JSONValue]]
"""An event name and the keyword arguments sent with it."""

UNKNOWN_TOOL_NAMES: tuple[str, ...] = ("teleport", "no_such_tool")
"""Tool names no test agent registers: calls to them must be answered ``not_found``."""

MALFORMED_ARGUMENTS: tuple[str, ...] = (
    "{not json",
    '{"unterminated": ',
    "NaN",
    '{"x": NaN}',
    "[1, 2",
    "[" * 40 + "]" * 40,
    "null",
    '"a string"',
    "42",
    "[]",
)
"""Argument texts that are not a JSON object, or not JSON at all (or nested too deep)."""

_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)
_SCALARS: st.SearchStrategy[JSONValue] = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**31), 2**31), _TEXT
)
_ANY_JSON: st.SearchStrategy[JSONValue] = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_TEXT, inner, max_size=2),
    max_leaves=4,
)
_WRONG_VALUES: dict[str, JSONValue] = {
    "string": 12345,
    "integer": "not an integer",
    "number": "not a number",
    "boolean": "not a boolean",
    "array": {"not": "an array"},
    "object": ["not", "an", "object"],
    "null": "not null",
}


# -- values from a JSON Schema ------------------------------------------------------------


def json_values(
    schema: JSONObject, *, root: JSONObject | None = None
) -> st.SearchStrategy[object]:
    """Values meant to satisfy ``schema``: the subset of JSON Schema that tools use.

    Handles ``type`` (one or a list), ``enum``, ``const``, ``$ref`` into ``$defs``,
    ``anyOf`` / ``oneOf`` / ``allOf`` (the first branch), object ``properties`` /
    ``required`` / ``additionalProperties``, array ``items`` / ``minItems`` / ``maxItems``,
    string ``minLength`` / ``maxLength`` / ``pattern`` and numeric bounds. Keywords it does
    not know are ignored, so a value may still fail an exotic schema: `valid_arguments`
    filters with the real validator.

    Args:
        schema: The (sub)schema to satisfy.
        root: The whole schema, where ``$ref`` pointers are resolved (``schema`` itself by
            default).
    """
    return _values(schema, schema if root is None else root, depth=0)


def _values(schema: JSONValue, root: JSONObject, depth: int) -> st.SearchStrategy[object]:
    if not isinstance(schema, dict) or depth > 6:
        return _ANY_JSON
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _values(_resolve(ref, root), root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return st.sampled_from(enum)
    combined = _combined(schema, root, depth)
    if combined is not None:
        return combined
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return st.one_of([_typed(str(k), schema, root, depth) for k in kind])
    if isinstance(kind, str):
        return _typed(kind, schema, root, depth)
    if "properties" in schema:
        return _typed("object", schema, root, depth)
    return _ANY_JSON


def _combined(
    schema: JSONObject, root: JSONObject, depth: int
) -> st.SearchStrategy[object] | None:
    for combinator in ("anyOf", "oneOf"):
        branches = schema.get(combinator)
        if isinstance(branches, list) and branches:
            return st.one_of([_values(branch, root, depth + 1) for branch in branches])
    every = schema.get("allOf")
    if isinstance(every, list) and every:
        return _values(every[0], root, depth + 1)
    return None


def _resolve(ref: str, root: JSONObject) -> JSONValue:
    if not ref.startswith("#"):
        return {}
    node: JSONValue = root
    for part in ref.lstrip("#").strip("/").split("/"):
        if not part:
            continue
        key = part.replace("~1", "/").replace("~0", "~")
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _typed(
    kind: str, schema: JSONObject, root: JSONObject, depth: int
) -> st.SearchStrategy[object]:
    if kind == "object":
        return _objects(schema, root, depth)
    if kind == "array":
        items = schema.get("items")
        low, high = _int(schema, "minItems") or 0, _int(schema, "maxItems")
        high = min(high, low + 3) if high is not None else low + 3
        return st.lists(
            _values(items if isinstance(items, dict) else {}, root, depth + 1),
            min_size=low,
            max_size=high,
            unique=schema.get("uniqueItems") is True,
        )
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        return st.integers(
            _bound(schema, "minimum", "exclusiveMinimum", 1),
            _bound(schema, "maximum", "exclusiveMaximum", -1),
        )
    if kind == "number":
        return _numbers(schema)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _ANY_JSON


def _objects(schema: JSONObject, root: JSONObject, depth: int) -> st.SearchStrategy[object]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required_list = schema.get("required")
    required = (
        {name for name in required_list if isinstance(name, str)}
        if isinstance(required_list, list)
        else set()
    )
    return st.fixed_dictionaries(
        {name: _values(properties.get(name, {}), root, depth + 1) for name in sorted(required)},
        optional={
            name: _values(sub, root, depth + 1)
            for name, sub in properties.items()
            if name not in required
        },
    )


def _strings(schema: JSONObject) -> st.SearchStrategy[object]:
    pattern = schema.get("pattern")
    low, high = _int(schema, "minLength") or 0, _int(schema, "maxLength")
    if isinstance(pattern, str):
        strings: st.SearchStrategy[str] = st.from_regex(pattern, fullmatch=True)
        return strings.filter(lambda s: low <= len(s) and (high is None or len(s) <= high))
    return st.text(
        st.characters(codec="utf-8"),
        min_size=low,
        max_size=high if high is not None else max(low, 10),
    )


def _numbers(schema: JSONObject) -> st.SearchStrategy[object]:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    return st.floats(
        min_value=float(low) if isinstance(low, int | float) else None,
        max_value=float(high) if isinstance(high, int | float) else None,
        exclude_min="exclusiveMinimum" in schema,
        exclude_max="exclusiveMaximum" in schema,
        allow_nan=False,
        allow_infinity=False,
    ).filter(math.isfinite)


def _int(schema: JSONObject, key: str) -> int | None:
    value = schema.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bound(schema: JSONObject, inclusive: str, exclusive: str, step: int) -> int | None:
    value = schema.get(inclusive)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return math.ceil(value) if step > 0 else math.floor(value)
    value = schema.get(exclusive)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (math.floor(value) + 1) if step > 0 else (math.ceil(value) - 1)
    return None


# -- a tool's arguments ------------------------------------------------------------------


def valid_arguments(target: AnyTool) -> st.SearchStrategy[str]:
    """Argument texts that ``target``'s JSON Schema accepts (checked with its validator)."""
    schema = target.parameters
    validator = compile_validator(schema)
    values = json_values(schema).filter(validator.is_valid)
    return values.map(lambda value: json.dumps(value, allow_nan=False))


def invalid_arguments(target: AnyTool) -> st.SearchStrategy[str]:
    """Argument texts that are JSON but that ``target``'s schema refuses.

    A required property left out, a property of the wrong type, an unexpected property
    (when the schema forbids them), or a JSON value that is not an object.
    """
    schema = target.parameters
    validator = compile_validator(schema)
    valid = json_values(schema).filter(lambda v: isinstance(v, dict))
    breakages: list[st.SearchStrategy[object]] = [
        st.sampled_from([[], "text", 3, None, True]),
    ]
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        names = sorted(properties)
        breakages.append(
            st.tuples(valid, st.sampled_from(names)).map(lambda vn: _without(vn[0], vn[1]))
        )
        breakages.append(
            st.tuples(valid, st.sampled_from(names)).map(
                lambda vn: _with(vn[0], vn[1], _wrong_value(properties.get(vn[1])))
            )
        )
    if schema.get("additionalProperties") is False:
        breakages.append(valid.map(lambda v: _with(v, "unexpected_property", 1)))
    broken = st.one_of(breakages).filter(lambda value: not validator.is_valid(value))
    return broken.map(lambda value: json.dumps(value, allow_nan=False))


def malformed_arguments() -> st.SearchStrategy[str]:
    """Argument texts that are not a JSON object: broken JSON, scalars, arrays, deep nesting."""
    return st.sampled_from(MALFORMED_ARGUMENTS)


def _without(value: object, name: str) -> object:
    assert isinstance(value, dict)
    return {key: item for key, item in value.items() if key != name}


def _with(value: object, name: str, item: object) -> object:
    assert isinstance(value, dict)
    return {**value, name: item}


def _wrong_value(schema: JSONValue) -> JSONValue:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return _WRONG_VALUES.get(kind) if isinstance(kind, str) else None


# -- tool calls and model responses -------------------------------------------------------


def _tools_of(tools: ToolRegistry | Iterable[AnyTool]) -> tuple[AnyTool, ...]:
    return tuple(tools)


def call_arguments(target: AnyTool) -> st.SearchStrategy[str]:
    """Argument texts for a call of ``target``: mostly valid, else invalid or malformed."""
    return st.one_of(
        valid_arguments(target),
        valid_arguments(target),
        invalid_arguments(target),
        malformed_arguments(),
    )


def tool_calls(
    tools: ToolRegistry | Iterable[AnyTool],
    *,
    unknown_names: Sequence[str] = UNKNOWN_TOOL_NAMES,
) -> st.SearchStrategy[tuple[str, str]]:
    """One call as ``(tool name, argument text)``.

    A call of one of ``tools`` (see `call_arguments`), or of an unknown tool (one of
    ``unknown_names``) with arbitrary arguments.
    """
    known = [
        st.tuples(st.just(target.name), call_arguments(target)) for target in _tools_of(tools)
    ]
    unknown = st.tuples(
        st.sampled_from(list(unknown_names)),
        st.one_of(_ANY_JSON.map(json.dumps), malformed_arguments()),
    )
    return st.one_of(*known, unknown) if unknown_names else st.one_of(*known)


def tool_call_batches(
    tools: ToolRegistry | Iterable[AnyTool],
    *,
    max_calls: int = 3,
    unknown_names: Sequence[str] = UNKNOWN_TOOL_NAMES,
) -> st.SearchStrategy[ModelResponse]:
    """A response asking for 1 to ``max_calls`` tool calls (ids ``call_1``, ``call_2``…).

    The ids are unique within the response only; `AgentStateMachine` renumbers them so
    they are unique across the run.
    """
    calls = st.lists(
        tool_calls(tools, unknown_names=unknown_names), min_size=1, max_size=max_calls
    )
    return st.builds(_batch, calls, st.one_of(st.none(), st.sampled_from(["Let me check.", ""])))


def _batch(calls: list[tuple[str, str]], content: str | None) -> ModelResponse:
    return ModelResponse(
        content=content,
        tool_calls=tuple(
            ToolCall(id=f"call_{number}", name=name, arguments=arguments)
            for number, (name, arguments) in enumerate(calls, start=1)
        ),
        finish_reason=FinishReason.TOOL_CALLS,
    )


def text_responses() -> st.SearchStrategy[ModelResponse]:
    """A response with no tool calls: an answer (sometimes empty, or cut off by length)."""
    return st.builds(
        ModelResponse,
        content=st.one_of(st.sampled_from(["Done.", "Here you are.", ""]), st.none(), _TEXT),
        finish_reason=st.sampled_from([FinishReason.STOP, FinishReason.STOP, FinishReason.LENGTH]),
    )


def model_errors() -> st.SearchStrategy[ModelError]:
    """Errors a model call may end with once its retries are spent."""
    return st.one_of(
        st.builds(
            ModelCallError,
            st.just("the server failed"),
            model=st.just("scripted"),
            reason=st.just("status"),
            status_code=st.sampled_from([500, 503, 429]),
        ),
        st.builds(
            ModelResponseError,
            st.just("the response could not be read"),
            model=st.just("scripted"),
            reason=st.just("malformed"),
        ),
    )


def model_responses(
    tools: ToolRegistry | Iterable[AnyTool],
    *,
    max_calls: int = 3,
    unknown_names: Sequence[str] = UNKNOWN_TOOL_NAMES,
) -> st.SearchStrategy[ModelStep]:
    """What a model may do in one call.

    Answer, ask for tool calls of ``tools`` (valid, invalid, malformed or unknown), or fail.
    Tool calls come about five times in eight, errors one time in eight.
    """
    batches = tool_call_batches(tools, max_calls=max_calls, unknown_names=unknown_names)
    texts = text_responses()
    return st.one_of(texts, batches, batches, batches, texts, batches, batches, model_errors())


# -- the application's side ---------------------------------------------------------------


def user_inputs() -> st.SearchStrategy[str]:
    """What a user may submit or answer: mostly text, sometimes empty or blank (refused)."""
    words = st.sampled_from(["hello", "Paris", "yes please", "book it"])
    return st.one_of(words, words, st.sampled_from(["", "   "]), _TEXT.filter(str.strip))


def decisions(
    calls: Iterable[ToolCall | str],
    *,
    client_side: Collection[str] = (),
    complete: bool = True,
) -> st.SearchStrategy[dict[str, Decision]]:
    """A decision per call: approve or deny, or an output for a client-side call.

    Args:
        calls: The pending calls (or their ids).
        client_side: Names or ids of calls the application answers with `Decision.output`
            (mostly; sometimes it approves or denies them instead, which denies them).
        complete: If False, a call may be left out or an unknown id added, so the decisions
            do not fit the pending set (`resolve_action` refuses them).
    """
    pending = [
        call if isinstance(call, ToolCall) else ToolCall(id=call, name="") for call in calls
    ]

    def one(call: ToolCall) -> st.SearchStrategy[Decision]:
        basic = st.one_of(
            st.just(Decision.approve()),
            st.builds(Decision.deny, st.one_of(st.none(), st.just("not now"))),
        )
        if call.id in client_side or call.name in client_side:
            outputs = st.builds(Decision.output, _ANY_JSON)
            return st.one_of(outputs, outputs, outputs, basic)
        return basic

    full = st.fixed_dictionaries({call.id: one(call) for call in pending})
    if complete:
        return full
    return st.tuples(
        full, st.sets(st.sampled_from([c.id for c in pending] or ["x"])), st.booleans()
    ).map(lambda parts: _misfit(parts[0], parts[1], parts[2]))


def _misfit(full: dict[str, Decision], drop: set[str], stray: bool) -> dict[str, Decision]:
    kept = {call_id: decision for call_id, decision in full.items() if call_id not in drop}
    if stray or kept == full:
        kept["call_unknown"] = Decision.approve()
    return kept


# -- events of the machines ---------------------------------------------------------------

_EVENT_TEXTS: st.SearchStrategy[JSONValue] = st.sampled_from(
    ["hello", "", "   ", "Paris", None, 7]
)
_CALL_LISTS: st.SearchStrategy[JSONValue] = st.sampled_from(
    [[], ["c1"], ["c1", "c2"], ["c1", "c1"], "c1", None, [""]]
)
_DECISION_MAPS: st.SearchStrategy[JSONValue] = st.sampled_from(
    [{}, {"c1": "approve"}, {"c1": "deny", "c2": "approve"}, {"c9": "x"}, ["c1"]]
)
_TIMES: st.SearchStrategy[JSONValue] = st.sampled_from([None, 0.0, 50.0, 100.0, 1e9, True])
_COUNTS: st.SearchStrategy[JSONValue] = st.integers(min_value=-1, max_value=4)

ANY_EVENT_ARGUMENTS: st.SearchStrategy[dict[str, JSONValue]] = st.fixed_dictionaries(
    {},
    optional={
        "text": _EVENT_TEXTS,
        "calls": _CALL_LISTS,
        "decisions": _DECISION_MAPS,
        "question": _EVENT_TEXTS,
        "now": _TIMES,
        "deadline": _TIMES,
        "tool_calls": _COUNTS,
        "needing_action": _COUNTS,
        "asking_user": _COUNTS,
        "reason": st.sampled_from(["cancelled", "hook failed"]),
    },
)
"""Arguments for any event of either machine, many of them wrong for that event."""

_fixed = st.fixed_dictionaries
_FITTING: dict[str, st.SearchStrategy[dict[str, JSONValue]]] = {
    "submit": _fixed({"text": _EVENT_TEXTS}),
    "need_action": _fixed({"calls": _CALL_LISTS}, optional={"deadline": _TIMES}),
    "resolve_action": _fixed({"decisions": _DECISION_MAPS}),
    "resolved": _fixed({"decisions": _DECISION_MAPS}),
    "need_input": _fixed(
        {"question": _EVENT_TEXTS, "calls": _CALL_LISTS}, optional={"deadline": _TIMES}
    ),
    "provide_input": _fixed({"text": _EVENT_TEXTS}),
    "expire": _fixed({"now": _TIMES}),
    "model_replied": _fixed(
        {"tool_calls": _COUNTS}, optional={"needing_action": _COUNTS, "asking_user": _COUNTS}
    ),
    "fail": _fixed({"error_type": st.just("RuntimeError"), "message": st.just("boom")}),
    "abort": _fixed({"reason": st.sampled_from(["cancelled", "expired", "hook failed"])}),
}


def event_arguments(event: str) -> st.SearchStrategy[dict[str, JSONValue]]:
    """Arguments that mostly fit ``event`` (often failing its guards), sometimes any at all."""
    fitting = _FITTING.get(event, st.just({}))
    return st.one_of(fitting, fitting, ANY_EVENT_ARGUMENTS)


def event_sends(
    machine: MachineTable | Sequence[str], *, unknown: Sequence[str] = ("teleport",)
) -> st.SearchStrategy[Send]:
    """One event to send to a machine (or one of ``unknown``), with arguments for it."""
    events = machine.events if isinstance(machine, MachineTable) else tuple(machine)
    return st.sampled_from([*events, *unknown]).flatmap(
        lambda event: st.tuples(st.just(event), event_arguments(event))
    )


def event_sequences(
    machine: MachineTable | Sequence[str], *, max_size: int = 20
) -> st.SearchStrategy[list[Send]]:
    """Sequences of events to send to a machine in order, most of them refused."""
    return st.lists(event_sends(machine), max_size=max_size)
