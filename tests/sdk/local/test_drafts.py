"""Jump-forward drafts from memory: the model's own split of a forced text, recalled next time.

The recorder's bookkeeping is tested on a toy vocabulary (no model); the engine's shared
memory on the real model: remembered drafts are used, confirmed, and change nothing written.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdk._local import LocalBackend
from sdk._local._drafts import DraftMemory, DraftRecorder
from tests.sdk.local._local_support import collect, request_for, text_of

# Token ids of a toy vocabulary: the model writes '{"name":"' as {" na me ":" (ids 0 1 2 3),
# the tokenizer as {" name ":" (ids 0 4 3).
VOCAB = [b'{"', b"na", b"me", b'":"', b"name", b'"', b"x", b'":"x']
KEY = '{"name":"'


def canonical(text: str) -> list[int]:
    return {KEY: [0, 4, 3], 'me":"': [2, 3], '":"': [3]}.get(text, [6])


def recorded(memory: DraftMemory, tokens: list[int], key: str = KEY) -> DraftRecorder:
    recorder = DraftRecorder(memory, VOCAB)
    recorder.propose(key, canonical)
    for token in tokens:
        recorder.emitted(token)
    return recorder


def test_first_draft_is_canonical_then_the_models_own_split() -> None:
    memory = DraftMemory()
    recorder = DraftRecorder(memory, VOCAB)
    assert recorder.propose(KEY, canonical) == [0, 4, 3]
    assert not recorder.from_memory
    for token in (0, 1, 2, 3):
        recorder.emitted(token)
    assert memory.recall(KEY) == (0, 1, 2, 3)
    # The tails at the model's token boundaries are remembered too.
    assert memory.recall('me":"') == (2, 3)
    assert memory.recall('":"') == (3,)
    again = DraftRecorder(memory, VOCAB)
    assert again.propose(KEY, canonical) == [0, 1, 2, 3]
    assert again.from_memory


def test_a_draft_cut_short_goes_on_from_memory() -> None:
    memory = DraftMemory()
    recorded(memory, [0, 1, 2, 3])
    recorder = DraftRecorder(memory, VOCAB)
    recorder.propose(KEY, canonical)
    recorder.emitted(0)
    recorder.emitted(1)
    # The grammar now forces the rest of the same text: the rest of the remembered split.
    assert recorder.propose('me":"', canonical) == [2, 3]
    assert recorder.from_memory


def test_a_model_that_leaves_the_remembered_split_gets_the_tails_memory() -> None:
    memory = DraftMemory()
    recorded(memory, [0, 1, 2, 3])
    recorder = DraftRecorder(memory, VOCAB)
    recorder.propose(KEY, canonical)
    recorder.emitted(0)
    recorder.emitted(4)  # "name" in one token this time
    assert recorder.propose('":"', canonical) == [3]
    recorder.emitted(3)
    assert memory.recall(KEY) == (0, 4, 3)  # the latest split wins


def test_a_token_running_past_the_forced_text_ends_the_recording() -> None:
    memory = DraftMemory()
    recorded(memory, [2, 7], key='me":"')  # me, then '":"x' merges the end with free text
    assert memory.recall('me":"') == (2,)
    recorded(memory, [7], key='":"')
    assert memory.recall('":"') is None  # nothing inside the forced text to remember


def test_memory_is_bounded_least_recently_used_first() -> None:
    memory = DraftMemory(capacity=2)
    memory.remember("a", [1])
    memory.remember("b", [2])
    assert memory.recall("a") == (1,)
    memory.remember("c", [3])
    assert memory.recall("b") is None
    assert memory.recall("a") == (1,)
    assert len(memory) == 2
    memory.remember("d", [])
    assert memory.recall("d") is None
    memory.clear()
    assert len(memory) == 0
    with pytest.raises(ValueError, match="capacity"):
        DraftMemory(capacity=0)


TEAM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "members": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 10},
                    "years": {"type": "integer", "minimum": 0, "maximum": 40},
                },
                "required": ["name", "years"],
                "additionalProperties": False,
            },
            "minItems": 3,
            "maxItems": 3,
        }
    },
    "required": ["members"],
    "additionalProperties": False,
}


@pytest.mark.slow
def test_remembered_drafts_are_used_and_change_nothing(
    local_backend: LocalBackend, plain_backend: LocalBackend
) -> None:
    request = request_for("List the three members of a small software team.", TEAM, max_tokens=128)
    memory = local_backend.load().draft_memory
    memory.clear()
    cold = collect(local_backend, request)
    cold_stats = local_backend.last_stats
    warm = collect(local_backend, request)
    warm_stats = local_backend.last_stats
    plain = collect(plain_backend, request)
    assert cold_stats is not None and warm_stats is not None
    assert text_of(cold) == text_of(warm) == text_of(plain)
    assert cold[-1].finish_reason == warm[-1].finish_reason == plain[-1].finish_reason == "stop"
    # Array items repeat their keys: later items draft what the model wrote for the first.
    assert cold_stats.remembered_tokens > 0
    # The same request again: every draft comes from memory, and the model confirms them all.
    assert warm_stats.drafted_tokens > 0
    assert warm_stats.remembered_tokens == warm_stats.drafted_tokens
    assert warm_stats.forced_tokens == warm_stats.drafted_tokens
    # A draft the cold run wasted (the model wrote that forced text in other pieces) is, warm,
    # the model's own pieces, confirmed in the pass before: a pass saved per such draft. (On
    # llama.cpp's Q4_1 logits this model writes the forced texts here as the tokenizer splits
    # them, so there is nothing to save; on torch's float32 ones it does not.)
    assert warm_stats.forward_passes <= cold_stats.forward_passes
    if cold_stats.drafted_tokens > cold_stats.forced_tokens:
        assert warm_stats.forward_passes < cold_stats.forward_passes
