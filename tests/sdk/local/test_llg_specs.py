"""The lexer probe of ``sdk/_local/_llg_specs.py`` (issue 42, item 3): a pattern that puts
llguidance's lexer in its error state only after a string's first bytes is found when the
request is checked, and dropped from the mask (the tracker checks it as the text streams)."""

from __future__ import annotations

import json
from typing import Any

import pytest

llguidance = pytest.importorskip("llguidance")

from sdk._local._llg_specs import PROBE_LENGTH, check_llg, lexer_stops, schema_plan  # noqa: E402
from tests.sdk.local._local_support import request_for  # noqa: E402

# Three digits, then up to 100 words: the lexer runs out of states at the first byte after the
# digits (the probe of a string's first bytes, '"a a', never got past the first digit).
LATE = {"type": "string", "maxLength": 5000, "pattern": "^[0-9]{3}(?:\\S+\\s+){0,99}\\S+$"}
LATER = {"type": "string", "maxLength": 5000, "pattern": "^ab-cd:(?:\\S+\\s+){0,99}\\S+$"}


@pytest.mark.parametrize("string", [LATE, LATER], ids=["after-3-bytes", "after-6-bytes"])
def test_a_lexer_stop_after_the_first_bytes_is_found(string: dict[str, Any]) -> None:
    assert lexer_stops(string) == "too many expressions constructed"
    assert lexer_stops({**string, "maxLength": 50}) == ""  # the product of counts is the cause
    schema = {"type": "object", "properties": {"code": string}, "required": ["code"]}
    check_llg(request_for("a code", schema))  # checked: widened, not refused
    plan = schema_plan(json.dumps(schema), "bounded")
    assert plan.masked["properties"]["code"] == {"type": "string", "maxLength": 5000}
    assert [(n.path, n.keyword) for n in plan.relaxations] == [("/properties/code", "pattern")]


def test_the_probe_walks_only_text_the_pattern_takes() -> None:
    # Patterns that run: the walk ends where the string must end, or after PROBE_LENGTH bytes.
    for pattern in ("^[0-9]{4}-[0-9]{2}$", "^[a-z]+(-[a-z]+)*$", "^https?://", "^x$"):
        assert lexer_stops({"type": "string", "pattern": pattern}) == "", pattern
    assert PROBE_LENGTH >= 16


@pytest.mark.torch  # the ll_tokenizer fixture reads the GGUF through transformers
def test_the_late_stop_is_real_on_the_packaged_model_s_tokenizer(ll_tokenizer: Any) -> None:
    # The pattern as written, on the model's own vocabulary: the first masks run, the one after
    # the three digits stops (a BackendError mid-generation, before the probe found it).
    grammar = llguidance.LLMatcher.grammar_from_json_schema(LATE)
    matcher = llguidance.LLMatcher(ll_tokenizer, grammar, log_level=0)
    for text in ('"', "1", "2", "3"):
        matcher.compute_logit_bias()
        assert not matcher.is_error(), text
        assert matcher.consume_tokens(ll_tokenizer.tokenize_str(text))
    matcher.compute_logit_bias()
    assert matcher.is_error()
    assert "too many expressions constructed" in matcher.get_error()
