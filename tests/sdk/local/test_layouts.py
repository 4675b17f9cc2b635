"""The JSON layouts of the local engine's grammar: what each lets the model write."""

from __future__ import annotations

import json

import pytest

from sdk._local import LocalBackend
from sdk._local._engine import Engine, grammars_for
from sdk._local._xgr_masks import JSON_FORMATS, Grammars

VALUE = {"name": "Ada", "tags": ["x", "y"], "age": 36}
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "age": {"type": "integer"},
    },
    "required": ["name", "tags", "age"],
    "additionalProperties": False,
}
TEXTS = {
    "compact": json.dumps(VALUE, separators=(",", ":")),
    "spaced": json.dumps(VALUE),
    "indented": json.dumps(VALUE, indent=2),
    "three newlines": '{"name": "Ada",\n\n\n"tags": [], "age": 1}',
    "spaces, no newline": '{"name": "Ada",        "tags": [], "age": 1}',
    "tabs after two newlines": '{"name": "Ada",\n\n\t\t"tags": [], "age": 1}',
    "space before a colon": '{"name" : "Ada", "tags": [], "age": 1}',
    "newline before a comma": '{"name": "Ada"\n, "tags": [], "age": 1}',
}
ACCEPTS = {
    "bounded": {"compact", "spaced", "indented", "tabs after two newlines"},
    "spaced": {"spaced"},
    "compact": {"compact"},
    "indented": {"indented"},
    "any": set(TEXTS),
}


@pytest.mark.slow
@pytest.mark.parametrize("json_format", JSON_FORMATS)
def test_each_layout_lets_the_model_write_its_own_spelling(
    engine: Engine, json_format: str
) -> None:
    tokenizer = engine.loaded.tokenizer
    grammars = (
        engine.grammars
        if engine.grammars.json_format == json_format
        else grammars_for(engine.loaded, json_format, engine.stop_ids)  # type: ignore[arg-type]
    )
    accepted = set()
    for name, text in TEXTS.items():
        constraint = grammars.constraint(SCHEMA, tokenizer)
        if constraint.accept_text(text):
            constraint.accept(sorted(engine.stop_ids)[0])
            assert constraint.terminated
            accepted.add(name)
    assert accepted == ACCEPTS[json_format]


@pytest.mark.slow
def test_bounded_is_the_default_and_uses_llama_cpps_space_rule(engine: Engine) -> None:
    assert engine.grammars.json_format == JSON_FORMATS[0] == "bounded"
    # llama.cpp's space rule: a gap is at most a newline or two and 20 spaces or tabs.
    tokenizer = engine.loaded.tokenizer
    head = '{"name": "Ada",\n'
    assert engine.grammars.constraint(SCHEMA, tokenizer).accept_text(head + " " * 20 + '"tags')
    assert not engine.grammars.constraint(SCHEMA, tokenizer).accept_text(head + " " * 21 + '"t')
    if isinstance(engine.grammars, Grammars):  # xgrammar's: through the bounded EBNF
        ebnf = engine.grammars.bounded_ebnf(json.dumps(SCHEMA))
        assert ebnf is not None  # the installed xgrammar spells gaps as expected (no fallback)
        assert "fieldstream_space ::=" in ebnf


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="json_format must be one of"):
        LocalBackend(json_format="pretty")  # type: ignore[arg-type]
