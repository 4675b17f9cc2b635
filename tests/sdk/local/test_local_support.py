"""The tests' own helpers: a cached greedy generation belongs to the backend that made it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

import tests.sdk.local._local_support as _local_support
from sdk._backend import Delta
from sdk._local import LocalBackend
from tests.sdk.local._local_support import greedy_case, text_of


class Scripted:
    """Stands in for a backend: every generation writes ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def _deltas(self) -> AsyncIterator[Delta]:
        yield Delta(text=self.text)

    def generate(self, request: Any) -> AsyncIterator[Delta]:
        return self._deltas()


def test_a_backend_at_a_gone_backends_address_gets_its_own_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A session fixture's backend is freed when the next runtime's tests begin, and CPython may
    # give its address to the next backend: once, the llama.cpp backend's cached deltas came
    # back for the torch one. Every object at one address here, as those two were in turn.
    monkeypatch.setattr(_local_support, "id", lambda obj: 0x7F608004E8D0, raising=False)
    first = cast(LocalBackend, Scripted("llama.cpp's text"))
    assert text_of(greedy_case(first, "person")) == "llama.cpp's text"
    second = cast(LocalBackend, Scripted("torch's text"))
    assert text_of(greedy_case(second, "person")) == "torch's text"
    assert text_of(greedy_case(first, "person")) == "llama.cpp's text"
