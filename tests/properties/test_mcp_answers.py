"""Property: an answer to a server's form is sent only if it fits the form's schema.

Whatever the user types, `elicit_result` gives the server a decline, a cancel, or content
that validates against the schema the server asked with; anything else is refused with a
message that says what was wrong (and the run keeps waiting), never sent.
"""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs

from agentfsm.tools._mcp_forms import elicit_result

KINDS = {
    "string": st.text(max_size=5),
    "integer": st.integers(-5, 5),
    "number": st.floats(-5, 5, allow_nan=False),
    "boolean": st.booleans(),
}
NAMES = st.sampled_from(["count", "seat", "ok", "action"])
NUMBER = {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}

Form = dict[str, object]


@st.composite
def answered_forms(draw: st.DrawFn) -> tuple[Form, str]:
    """A form the server asks (flat fields of simple types) and what the user types."""
    fields = draw(st.dictionaries(NAMES, st.sampled_from(sorted(KINDS)), min_size=1, max_size=3))
    required = draw(st.lists(st.sampled_from(sorted(fields)), unique=True))
    form: Form = {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in fields.items()},
        "required": required,
    }
    values = st.one_of(*KINDS.values(), st.none())
    content = st.dictionaries(st.sampled_from(sorted(fields)), values).map(json.dumps)
    actions = st.sampled_from(['{"action": "decline"}', '{"action": "cancel"}'])
    words = st.sampled_from(["NaN", "inf", "yes", "3", "2.5", ""])
    text = draw(st.one_of(st.text(max_size=8), content, actions, words))
    return form, text


@given(answered_forms())
@example((NUMBER, "NaN"))  # not JSON: refused, never sent
@example((NUMBER, "-inf"))
@example((NUMBER, '{"n": NaN}'))
def test_an_answer_is_sent_only_if_it_fits_the_form(drawn: tuple[Form, str]) -> None:
    form, text = drawn
    request = {"elicit": "form", "message": "?", "schema": form}
    try:
        result = elicit_result("p", "t", request, text)  # type: ignore[arg-type]
    except ValueError as refused:
        problem = str(refused)
    else:
        problem = ""
    if problem:
        assert problem.startswith("Your answer was not taken")
    elif result.action == "accept":
        assert result.content is not None
        assert Draft202012Validator(form).is_valid(result.content)
        json.dumps(result.content, allow_nan=False)  # what the server gets is JSON
    else:
        assert result.content is None
        assert "action" not in form["properties"]  # type: ignore[operator]
