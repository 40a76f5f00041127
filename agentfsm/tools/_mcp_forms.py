"""A server's question for the user (a form or a URL to visit) and the user's answer to it.

Shared by the two ways a server asks: an input-required result (2026-07-28) and a request in
the middle of a call (earlier revisions). The answer is text: ``{"action": "decline"}`` or
``{"action": "cancel"}`` declines or cancels; for a URL any other text accepts (the user went
there); for a form it is the form's content, checked against the form's schema. Private to
`agentfsm.tools.mcp` (needs the ``mcp`` extra).
"""

from __future__ import annotations

import json
import math
from typing import Literal, cast

from jsonschema.exceptions import (  # type: ignore[import-untyped]  # no stubs
    SchemaError,
    UnknownType,
)
from mcp import types as mcp_types

from agentfsm.errors import MCPServerError
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.tools.schema import compile_validator, schema_error


def _mode(request: JSONObject) -> JSONValue:
    """``"form"`` or ``"url"``: ``elicit`` of a question asked mid-call, else ``mode``."""
    return request.get("elicit", request.get("mode", "form"))


def question_of(request: JSONObject) -> str:
    """The question the user reads: the server's message (and the URL to visit)."""
    message = str(request.get("message", ""))
    if _mode(request) == "url":
        return f"{message}\n{request.get('url', '')}\n(answer when done, or decline or cancel)"
    return message


def elicit_result(
    prefix: str, tool: str, request: JSONObject, text: str
) -> mcp_types.ElicitResult:
    """The user's answer as the server's elicitation result.

    ``{"action": "decline"}`` and ``{"action": "cancel"}`` decline or cancel (unless the form
    has a field named ``action``); for a URL any other answer accepts (the user went there);
    for a form the answer is its content (`form_content`), checked against its schema.

    Raises:
        ValueError: The content does not fit the form: the message says where and why.
    """
    action = _action(request, text)
    if action != "accept":
        return mcp_types.ElicitResult(action=action)
    if _mode(request) == "url":
        return mcp_types.ElicitResult(action="accept")
    schema = cast(JSONObject, request.get("schema") or {})
    try:
        content = form_content(prefix, tool, schema, text)
    except MCPServerError as exc:
        raise ValueError(f"Your answer was not taken: {exc.problem}. {_how(schema)}") from None
    try:
        problem = schema_error(compile_validator(schema), cast(JSONObject, content))
    except (ValueError, SchemaError, UnknownType):  # a schema agentfsm cannot read
        problem = None  # (the server judges the answer itself)
    if problem is not None:
        pointer, message = problem
        raise ValueError(
            f"Your answer was not taken: at {pointer or '/'!r}, {message}. {_how(schema)}"
        )
    return mcp_types.ElicitResult(action="accept", content=content)


def _how(schema: JSONObject) -> str:
    names = sorted(cast(JSONObject, schema.get("properties") or {}))
    alone = " (or the value of the one field alone)" if len(names) == 1 else ""
    return (
        f"Answer with a JSON object of the fields {names!r}{alone}, or "
        '{"action": "decline"} or {"action": "cancel"}.'
    )


def _action(request: JSONObject, text: str) -> Literal["accept", "decline", "cancel"]:
    try:
        parsed = _json(text)
    except ValueError:
        return "accept"
    fields = cast(
        JSONObject, cast(JSONObject, request.get("schema") or {}).get("properties") or {}
    )
    if (
        isinstance(parsed, dict)
        and set(parsed) == {"action"}
        and "action" not in fields
        and parsed["action"] in ("decline", "cancel")
    ):
        return cast(Literal["decline", "cancel"], parsed["action"])
    return "accept"


def form_content(
    prefix: str, remote: str, schema: JSONObject, answer: str
) -> dict[str, str | int | float | bool | list[str] | None]:
    """The user's answer as the form's content.

    A JSON object is the content as it is; any other text fills a form of one field,
    converted to that field's type.

    Raises:
        MCPServerError: The form has several fields and the answer is not a JSON object.
    """
    try:
        parsed = _json(answer)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return cast("dict[str, str | int | float | bool | list[str] | None]", parsed)
    fields = cast(JSONObject, schema.get("properties") or {})
    if len(fields) != 1:
        raise MCPServerError(
            prefix,
            f"its tool {remote!r} asked for a form of the fields {sorted(fields)!r}: answer "
            f"with a JSON object of them, not {answer!r}",
        )
    ((name, field),) = fields.items()
    kind = field.get("type") if isinstance(field, dict) else None
    return {name: _typed(answer, kind)}


def _json(text: str) -> JSONValue:
    """``text`` parsed as strict JSON (``NaN`` and ``Infinity`` are not JSON).

    Raises:
        ValueError: It is not.
    """
    return cast(JSONValue, json.loads(text, parse_constant=_not_json))


def _not_json(constant: str) -> JSONValue:
    raise ValueError(f"{constant} is not JSON")


def _typed(answer: str, kind: JSONValue) -> str | int | float | bool:
    text_ = answer.strip()
    try:
        if kind == "integer":
            return int(text_)
        if kind == "number" and math.isfinite(number := float(text_)):
            return number  # (NaN and infinity are not JSON: left to be refused)
    except ValueError:
        return answer
    if kind == "boolean" and text_.lower() in ("true", "yes", "false", "no"):
        return text_.lower() in ("true", "yes")
    return answer
