"""Jump-forward: the same greedy (and seeded) output with it on and off, fewer forward passes,
under the default layout and every other."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sdk._local import LocalBackend
from sdk._local._xgr_masks import JSON_FORMATS
from tests.sdk.local._local_support import (
    CASES,
    NESTED,
    collect,
    drafts_expected,
    greedy_case,
    request_for,
    text_of,
)

pytestmark = pytest.mark.slow

COMPARED = ["person", "person-prose", "nested", "array-maxitems", "flags"]


@pytest.mark.usefixtures("crowd")  # the same text in a full batch
@pytest.mark.parametrize("case", COMPARED)
def test_greedy_output_is_identical_with_and_without(
    local_backend: LocalBackend, plain_backend: LocalBackend, case: str
) -> None:
    with_jf = greedy_case(local_backend, case)
    without = greedy_case(plain_backend, case)
    assert text_of(with_jf) == text_of(without)
    assert with_jf[-1].finish_reason == without[-1].finish_reason == "stop"
    on, off = with_jf[-1].usage, without[-1].usage
    assert on is not None and off is not None
    assert on.completion_tokens == off.completion_tokens
    assert off.forced_tokens == 0
    assert (on.forced_tokens > 0) == drafts_expected(local_backend)


@pytest.mark.usefixtures("crowd")  # the same text in a full batch
@pytest.mark.parametrize("json_format", JSON_FORMATS[1:])
@pytest.mark.parametrize("case", ["nested", "array-maxitems"])
def test_greedy_output_is_identical_in_every_layout(
    layout_backends: Callable[[str], tuple[LocalBackend, LocalBackend]],
    json_format: str,
    case: str,
) -> None:
    on, off = layout_backends(json_format)
    schema, prompt = CASES[case]
    request = request_for(prompt, schema, max_tokens=96)
    with_jf, without = collect(on, request), collect(off, request)
    assert text_of(with_jf) == text_of(without)
    assert with_jf[-1].finish_reason == without[-1].finish_reason
    usage = with_jf[-1].usage
    assert usage is not None and (usage.forced_tokens > 0) == drafts_expected(on)


def test_forced_deltas_are_marked_and_save_forward_passes(
    local_backend: LocalBackend, plain_backend: LocalBackend
) -> None:
    schema, prompt = CASES["nested"]
    on = collect(local_backend, request_for(prompt, schema))
    stats_on = local_backend.last_stats
    off = collect(plain_backend, request_for(prompt, schema))
    stats_off = plain_backend.last_stats
    assert stats_on is not None and stats_off is not None
    forced_text = "".join(d.text for d in on if d.forced)
    # Only keys and punctuation are forced by this grammar: never a value's characters.
    assert forced_text
    assert set(forced_text) <= set('{}":, \n' + "title" + "author" + "first" + "born")
    assert not any(d.forced for d in off)
    assert stats_on.forward_passes == stats_off.forward_passes - stats_on.forced_tokens
    assert stats_on.forward_passes < stats_off.forward_passes


@pytest.mark.usefixtures("crowd")  # the same text in a full batch
def test_seeded_sampling_is_identical_with_and_without(
    local_backend: LocalBackend, plain_backend: LocalBackend
) -> None:
    request = request_for("Describe a book.", NESTED, temperature=0.9, top_p=0.95, seed=11)
    on = collect(local_backend, request)
    off = collect(plain_backend, request)
    assert text_of(on) == text_of(off)
    assert on[-1].usage is not None
    assert (on[-1].usage.forced_tokens > 0) == drafts_expected(local_backend)
