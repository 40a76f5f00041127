"""What a typed answer must be: an Agent's ``output_type``, as one `OutputSpec`.

An Agent given ``output_type`` (a pydantic model class, or a JSON Schema of an object)
validates the model's final answer against it in the TurnLoop's ``validating`` step
(docs/contract.md §2; the driving is `agentfsm.agent.typed`). The spec says how the model is
asked for that shape — as the API's structured output (``response_format`` with a JSON
Schema) or, for a model without it, as a ``final_answer`` tool whose arguments are the
answer — and how an answer is parsed, checked, stored and read back.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]  # no stubs
from pydantic import BaseModel, ValidationError

from agentfsm import _checks as checks
from agentfsm.errors import OutputRejectedError
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.tools.schema import compile_validator, json_pointer, validator_class
from agentfsm.tools.spec import Tool

FINAL_ANSWER = "final_answer"
"""The tool through which a model without structured output gives its typed answer."""

ACCEPTED = "Final answer accepted."
"""The tool message answering a ``final_answer`` call that validated."""

MAX_PROBLEMS = 10
"""At most this many validation errors are recorded and shown to the model."""

OutputType = type[BaseModel] | Mapping[str, JSONValue]
"""What ``output_type`` may be: a pydantic model class, or a JSON Schema of an object."""

OutputValidator = Callable[[object], object]
"""An application check of a validated answer: ``validator(output)``, sync or async.

It returns None (the output stands) or a new output of the same type, or raises
`OutputRejectedError` to send the answer back to the model with its message.
"""

_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def _final_answer_body(**_: object) -> str:
    """The body of ``final_answer`` when it is called beside other tools: refused."""
    raise OutputRejectedError(
        f"call {FINAL_ANSWER} on its own, once the other calls have returned"
    )


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """A run's output type: how answers are asked for, validated, stored and read back.

    Build one with `OutputSpec.of`.
    """

    model: type[BaseModel] | None
    """The pydantic model class, or None for a JSON Schema given as a mapping."""
    schema: JSONObject
    """The JSON Schema of the answer (an object)."""
    name: str
    """The schema's name, as the API is told (``^[a-zA-Z0-9_-]{1,64}$``)."""
    retries: int
    """Invalid answers a turn may send back to the model before it fails."""
    validators: tuple[OutputValidator, ...]
    """The application's checks, run in order on an answer that validated."""
    checker: Draft202012Validator | None
    """The compiled JSON Schema validator (for a schema given as a mapping)."""

    @classmethod
    def of(
        cls,
        output_type: object,
        retries: object = 2,
        validators: object = (),
    ) -> OutputSpec | None:
        """The spec of ``output_type``, or None when it is None (an untyped run).

        Raises:
            TypeError: ``output_type`` is neither a pydantic model class nor a mapping; or
                ``output_retries`` is not an int; or ``output_validators`` is not an
                iterable of callables.
            ValueError: The schema is not a valid JSON Schema of an object, or
                ``output_retries`` is negative.
        """
        plain = type(retries) is int and retries >= 0 and type(validators) is tuple
        if output_type is None and plain and not validators:
            return None  # (an untyped run with the defaults: nothing more to check)
        checks.whole("output_retries", retries, minimum=0)
        if isinstance(validators, (str, bytes)) or not isinstance(validators, Iterable):
            checks.refuse_type("output_validators", validators, "an iterable of callables")
        checked = tuple(validators)
        for validator in checked:
            if not callable(validator):
                checks.refuse_type("output_validators[...]", validator, "a callable")
        if output_type is None:
            if checked:
                raise ValueError("output_validators need an output_type to validate against")
            return None
        model, schema = _model_and_schema(output_type)
        title = schema.get("title")
        name = _NAME.sub("_", title)[:64] if isinstance(title, str) and title else "answer"
        checker = None if model is not None else compile_validator(schema)
        return cls(model, schema, name, cast(int, retries), checked, checker)

    def response_format(self) -> JSONObject:
        """The chat completions ``response_format`` asking for this schema."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.schema, "strict": self.strict},
        }

    @property
    def strict(self) -> bool:
        """Whether the schema fits the API's strict mode (every object closed, all required)."""
        return _closed(self.schema)

    def tool(self) -> Tool[..., str]:
        """The ``final_answer`` tool for a model without structured output.

        Called alone, its arguments are the answer (validated by the loop, not run); called
        beside other tools it runs, and answers with an error asking for it alone.
        """
        return Tool(
            _final_answer_body,
            name=FINAL_ANSWER,
            description="Give your final answer, in the required shape. Call it on its own, "
            "once you have everything you need.",
            parameters=self.schema,
        )

    def parse(self, text: str | None) -> tuple[object, tuple[str, ...]]:
        """``text`` (the answer as JSON) as the output, and what is wrong with it (if any)."""
        if self.model is not None:
            try:
                return self.model.model_validate_json(text or ""), ()
            except ValidationError as error:
                return None, _pydantic_problems(error)
        try:
            value = json.loads(text or "")
        except ValueError as error:
            return None, (f"(root): the answer is not JSON ({error})",)
        checker = cast(Draft202012Validator, self.checker)
        found = sorted(checker.iter_errors(value), key=lambda e: list(map(str, e.path)))
        problems = tuple(
            f"{json_pointer(e.absolute_path) or '(root)'}: {e.message}"
            for e in found[:MAX_PROBLEMS]
        )
        return value, problems

    async def check(self, output: object) -> tuple[object, tuple[str, ...]]:
        """Run the application's validators on a valid ``output``, in order.

        Returns:
            The output (as the validators left it) and, if one raised
            `OutputRejectedError`, its message as the one problem.
        """
        for validator in self.validators:
            try:
                result = validator(output)
                if inspect.isawaitable(result):
                    result = await cast(Awaitable[object], result)
            except OutputRejectedError as rejected:
                return output, (rejected.message,)
            if result is not None:
                output = result
        return output, ()

    def dump(self, output: object) -> JSONValue:
        """``output`` as JSON, for the ``output_valid`` event (and the store)."""
        if isinstance(output, BaseModel):
            return cast(JSONValue, output.model_dump(mode="json"))
        return cast(JSONValue, output)

    def load(self, data: JSONValue) -> object:
        """The output an ``output_valid`` event recorded, as its type (a restored run)."""
        return self.model.model_validate(data) if self.model is not None else data

    def feedback(self, problems: Iterable[str], *, tool: bool, called: bool) -> str:
        """What the model is told of an invalid answer, to correct it.

        Args:
            problems: What is wrong.
            tool: The answer is asked for as a ``final_answer`` call.
            called: The invalid answer was such a call (else it was text).
        """
        listed = "\n".join(f"- {problem}" for problem in problems)
        if called:
            how = f"Call {FINAL_ANSWER} again with corrected arguments."
        elif tool:
            how = f"Give your final answer by calling {FINAL_ANSWER}, on its own."
        else:
            how = "Answer again with only a JSON object that matches the required schema."
        return f"Your answer is not valid:\n{listed}\n{how}"


def _model_and_schema(output_type: object) -> tuple[type[BaseModel] | None, JSONObject]:
    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        try:
            schema = cast(JSONObject, output_type.model_json_schema())
        except Exception as error:  # pydantic's schema errors have several types
            raise TypeError(
                f"output_type {output_type.__name__!r} has no JSON Schema: {error}"
            ) from error
        model: type[BaseModel] | None = output_type
    elif isinstance(output_type, Mapping):
        schema = cast(JSONObject, copy.deepcopy(dict(output_type)))
        try:
            validator_class(schema).check_schema(schema)
        except ValueError as error:  # (a $schema naming no draft agentfsm knows)
            raise ValueError(f"output_type is not a valid JSON Schema: {error}") from None
        except SchemaError as error:
            raise ValueError(
                f"output_type is not a valid JSON Schema: at "
                f"{json_pointer(error.absolute_path) or '(root)'}: {error.message}"
            ) from None
        model = None
    else:
        checks.refuse_type(
            "output_type",
            output_type,
            "a pydantic model class, a JSON Schema (a mapping) of an object, or None",
        )
    if schema.get("type") != "object":
        raise ValueError(
            f"output_type must describe a JSON object (structured output and tool arguments "
            f"are objects); its schema has type {schema.get('type')!r}"
        )
    return model, schema


def _pydantic_problems(error: ValidationError) -> tuple[str, ...]:
    problems = []
    for item in error.errors(include_url=False)[:MAX_PROBLEMS]:
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        problems.append(f"{where}: {item['msg']}")
    return tuple(problems)


def _closed(schema: object) -> bool:
    """Every object in ``schema`` forbids other properties and requires all of its own."""
    if isinstance(schema, list):
        return all(_closed(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = schema.get("required")
        if schema.get("additionalProperties") is not False:
            return False
        if not isinstance(required, list) or set(required) != set(properties):
            return False
    return all(_closed(value) for value in schema.values())
