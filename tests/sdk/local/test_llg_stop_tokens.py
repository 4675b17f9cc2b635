"""The llama.cpp runtime's stop tokens and refusals (``sdk._local._llg_masks``,
``sdk._local._llg_specs.check_llg``): a Lark grammar that names the stop token itself
(``<|im_end|>``) lets the model write it and ends there; a mask that allows nothing raises a
BackendError instead of letting a forbidden token be picked; ``check_request`` refuses a special
token the loaded model does not have, and a malformed schema, as UnsupportedConstraint.

The mask tests read the packaged model's tokenizer only; the generation and the check of
special tokens load the model on the llama.cpp runtime (where llguidance's masks run)."""

from __future__ import annotations

from typing import Any

import pytest

from sdk import BackendError, Grammar, UnsupportedConstraint
from sdk._backend import GenerationRequest
from sdk._local import LocalBackend
from sdk._local._constrain import GrammarSpec
from sdk._local._llg_masks import LlgGrammars
from tests.sdk.local._local_support import collect, constrained, import_llguidance_hf, text_of

np = pytest.importorskip("numpy", reason="needs numpy (the local extra)")
llguidance_hf = import_llguidance_hf()

NAMES_END = GrammarSpec("lark", 'start: "hi" <|im_end|>')
"""A grammar that ends with the model's end-of-turn token (its EOS, the generation's stop)."""


def grammars(ll_tokenizer: Any, stop: list[int]) -> LlgGrammars:
    return LlgGrammars(ll_tokenizer, ll_tokenizer.vocab_size, [], stop_token_ids=stop)


def token_of(tokenizer: Any, text: str) -> int:
    [token] = tokenizer.encode(text, add_special_tokens=False)
    return int(token)


def test_a_grammar_naming_the_stop_token_lets_it_be_written_and_ends(
    ll_tokenizer: Any, tokenizer: Any
) -> None:
    end = token_of(tokenizer, "<|im_end|>")
    assert end == tokenizer.eos_token_id
    constraint = grammars(ll_tokenizer, [end]).constraint_for(NAMES_END, tokenizer)
    assert constraint.accept_text("hi")
    assert constraint.allowed() == {end}
    logits = np.zeros((1, ll_tokenizer.vocab_size), dtype=np.float32)
    constraint.mask(logits)
    assert int(np.argmax(logits)) == end and np.isfinite(logits).sum() == 1
    constraint.accept(end)
    assert constraint.terminated
    constraint.rollback(1)  # the named stop token is one step, as any other
    assert not constraint.terminated and constraint.allowed() == {end}


def test_a_mask_that_allows_nothing_raises_backend_error(ll_tokenizer: Any, tokenizer: Any) -> None:
    # <|im_end|> is llguidance's end of sequence but not a stop token of this generation (it
    # stops on <|endoftext|>): nothing may follow "hi".
    other = token_of(tokenizer, "<|endoftext|>")
    constraint = grammars(ll_tokenizer, [other]).constraint_for(NAMES_END, tokenizer)
    assert constraint.accept_text("hi")
    logits = np.zeros((1, ll_tokenizer.vocab_size), dtype=np.float32)
    with pytest.raises(BackendError, match="the grammar allows no token here"):
        constraint.mask(logits)


@pytest.fixture(scope="module")
def llama_backend() -> LocalBackend:
    backend = LocalBackend(threads=1, runtime="llama.cpp")
    assert backend.load().loaded.runtime == "llama.cpp"
    return backend


@pytest.mark.slow
def test_a_lark_grammar_ending_with_the_stop_token_generates(llama_backend: LocalBackend) -> None:
    grammar = Grammar('start: "hi" <|im_end|>', syntax="lark")
    deltas = collect(llama_backend, constrained("Say hi.", grammar, max_tokens=8))
    assert text_of(deltas) == "hi"
    assert deltas[-1].finish_reason == "stop"


def request(schema: Any = None, constraint: Grammar | None = None) -> GenerationRequest:
    return GenerationRequest(
        messages=({"role": "user", "content": "x"},),
        schema=schema if schema is not None else {"type": "string"},
        constraint=constraint,
    )


@pytest.mark.slow
def test_check_refuses_a_special_token_the_loaded_model_lacks(
    llama_backend: LocalBackend,
) -> None:
    llama_backend.check_request(
        request(constraint=Grammar('start: "hi" <|im_end|>', syntax="lark"))
    )
    with pytest.raises(UnsupportedConstraint, match=r"unknown special token: \"<\|nonexistent"):
        llama_backend.check_request(
            request(constraint=Grammar('start: "hi" <|nonexistent|>', syntax="lark"))
        )


MALFORMED = {
    "enum-not-a-list": {"type": "object", "properties": {"a": {"type": "string", "enum": "abc"}}},
    "unhashable-required": {"type": "object", "properties": {"a": {}}, "required": [["a"]]},
}


@pytest.mark.parametrize("schema", MALFORMED.values(), ids=MALFORMED.keys())
def test_check_refuses_a_malformed_schema_as_unsupported(schema: Any) -> None:
    backend = LocalBackend(threads=1, runtime="llama.cpp")  # not loaded: nothing to load
    with pytest.raises(UnsupportedConstraint, match="cannot compile the JSON Schema: malformed"):
        backend.check_request(request(schema))
