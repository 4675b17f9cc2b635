"""What xgrammar is given of a schema: large counted repetitions in patterns loosened, in
schema positions only (``sdk/_local/_xgr_schema.py``), and a loosened pattern matches every
string the original does (``sdk._regex._ecma.loosen_counts``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._local._xgr_schema import MAX_MASK_COUNT, loosened, loosened_text
from sdk._regex._ecma import compile_ecma, loosen_counts

HUGE = "^[a-z]{1,65535}$"
LOOSE = "^[a-z]{1,}$"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (HUGE, LOOSE),
        ("^.{0,5000}$", "^.{0,}$"),
        ("a{2000}", "a{1000,}"),  # an exact count: at least as many as the mask may count
        ("a{1001,}", "a{1000,}"),
        ("(?:ab){3,99999}?", "(?:ab){3,}?"),  # lazy stays lazy
        ("a{1,1000}b{1000}", "a{1,1000}b{1000}"),  # at the limit: as written
        ("x\\{5000}", "x\\{5000}"),  # an escaped brace is no quantifier
        ("[{]{5,9999}", "[{]{5,}"),  # nor a brace in a class
        ("(a{99999}){2}", "(a{1000,}){2}"),
    ],
)
def test_counts_over_the_limit_are_loosened(pattern: str, expected: str) -> None:
    assert loosen_counts(pattern, MAX_MASK_COUNT) == expected


_ATOMS = st.sampled_from(["a", "b", "[ab]", "(?:ab)", "(a|bb)", "."])
_QUANTS = st.sampled_from(["", "?", "*", "+", "{0}", "{2}", "{1,3}", "{4}", "{2,}", "{0,5}"])


@st.composite
def _patterns(draw: st.DrawFn, depth: int = 2) -> str:
    terms = []
    for _ in range(draw(st.integers(1, 3))):
        atom = draw(_ATOMS)
        if depth and draw(st.booleans()):
            atom = f"(?:{draw(_patterns(depth=depth - 1))})"
        terms.append(atom + draw(_QUANTS))
    return "".join(terms)


@settings(max_examples=300, deadline=None)
@given(_patterns(), st.lists(st.text("ab", max_size=12), min_size=1, max_size=8))
def test_a_loosened_pattern_matches_every_string_the_original_does(
    pattern: str, texts: list[str]
) -> None:
    loose = loosen_counts(pattern, 2)  # a small limit, so that most counts are loosened
    exact, wider = compile_ecma(pattern), compile_ecma(loose)
    for text in texts:
        if exact.fullmatch(text):
            assert wider.fullmatch(text), (pattern, loose, text)
        if exact.search(text):
            assert wider.search(text), (pattern, loose, text)


def test_every_schema_position_is_loosened_and_no_data_is() -> None:
    data = {"pattern": HUGE}  # a value the schema describes, not a schema
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": HUGE},
            "pattern": {"type": "string", "pattern": HUGE},  # a property called "pattern"
            "tags": {"type": "array", "items": {"type": "string", "pattern": HUGE}},
            "pair": {"prefixItems": [{"pattern": HUGE}, {"type": "integer"}]},
            "either": {"anyOf": [{"pattern": HUGE}, {"type": "null"}]},
            "fixed": {"const": data, "enum": [data], "default": data, "examples": [data]},
        },
        "additionalProperties": {"pattern": HUGE},
        "$defs": {"id": {"pattern": HUGE}},
    }
    before = json.dumps(schema)
    out = loosened(schema)
    assert json.dumps(schema) == before  # the caller's schema is not changed
    props = out["properties"]
    assert props["code"]["pattern"] == LOOSE
    assert props["pattern"]["pattern"] == LOOSE
    assert props["tags"]["items"]["pattern"] == LOOSE
    assert props["pair"]["prefixItems"][0]["pattern"] == LOOSE
    assert props["either"]["anyOf"][0]["pattern"] == LOOSE
    assert out["additionalProperties"]["pattern"] == LOOSE
    assert out["$defs"]["id"]["pattern"] == LOOSE
    assert props["fixed"] == schema["properties"]["fixed"]  # data stays exactly as written
    assert props["fixed"]["const"]["pattern"] == HUGE


def test_a_schema_with_nothing_to_loosen_is_given_as_it_is() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^a{3}$"}}}
    assert loosened(schema) is schema
    text = json.dumps(schema, separators=(",", ":"))
    assert loosened_text(text) is text
    assert loosened_text('{"type":"string"}') == '{"type":"string"}'
    huge = json.dumps({"type": "string", "pattern": HUGE}, separators=(",", ":"))
    assert json.loads(loosened_text(huge)) == {"type": "string", "pattern": LOOSE}


# -- a schema xgrammar refuses is known when the request is checked (issue 42) -------------

# The torch runtime's refusals the corpus measured, each minimal: a `false` subschema, an
# integer bound past int64.
XGR_REFUSED = [
    ({"type": "object", "properties": {"a": False, "b": {"type": "integer"}}}, '{"b":1}'),
    ({"type": "integer", "minimum": -1e30}, "5"),
]
# Refused by xgrammar's own strict mode, which the project's strict rule replaces (it leaves
# open what closing would contradict): a tuple shorter than its minItems, minProperties above
# the listed properties.
STRICT_MODE_REFUSED = [
    ({"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 3}, "[1,2,3]"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 3}, "{}"),
]


@pytest.mark.torch
@pytest.mark.parametrize(("schema", "document"), STRICT_MODE_REFUSED)
def test_what_xgrammar_s_strict_mode_refused_the_strict_rule_leaves_open(
    schema: Any, document: str, tokenizer: Any
) -> None:
    xgr = pytest.importorskip("xgrammar")
    from sdk._local._constrain import GrammarSpec
    from sdk._local._xgr_masks import Grammars
    from sdk._local._xgr_schema import _xgr_refusal

    with pytest.raises(Exception):  # noqa: B017  # xgrammar's own errors vary
        xgr.Grammar.from_json_schema(json.dumps(schema), strict_mode=True)
    assert _xgr_refusal(schema) == ""
    grammars = Grammars(
        tokenizer, len(tokenizer), json_format="compact", stop_token_ids=[tokenizer.eos_token_id]
    )
    constraint = grammars.constraint_for(GrammarSpec("json_schema", json.dumps(schema)), tokenizer)
    assert constraint.accept_text(document)


@pytest.mark.torch
@pytest.mark.parametrize(("schema", "document"), XGR_REFUSED)
def test_a_schema_xgrammar_refuses_is_widened_when_the_request_is_checked(
    schema: Any, document: str, tokenizer: Any
) -> None:
    xgr = pytest.importorskip("xgrammar")
    from sdk._local import LocalBackend
    from sdk._local._constrain import GrammarSpec, check
    from sdk._local._xgr_masks import Grammars
    from sdk._local._xgr_schema import _xgr_refusal, xgr_plan
    from tests.sdk.local._local_support import request_for

    text = json.dumps(schema)
    with pytest.raises(Exception):  # noqa: B017  # xgrammar's own errors vary
        xgr.Grammar.from_json_schema(text, strict_mode=True)
    assert _xgr_refusal(schema)  # the reason, without compiling anything for a model
    check(request_for("x", schema))  # checked: widened, not refused
    plan = xgr_plan(text)
    assert plan.relaxations  # by the never-narrower rewrite, or widened where still refused
    assert _xgr_refusal(json.loads(plan.text)) == ""
    assert LocalBackend(runtime="torch").explain(schema).refused == plan.refused
    # The compile then takes it, and the mask takes the document, under every layout.
    for layout in ("bounded", "compact"):
        grammars = Grammars(
            tokenizer, len(tokenizer), json_format=layout, stop_token_ids=[tokenizer.eos_token_id]
        )
        constraint = grammars.constraint_for(GrammarSpec("json_schema", text), tokenizer)
        assert constraint.accept_text(document), (layout, plan.text)
