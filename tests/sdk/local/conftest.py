"""Fixtures of the local-engine tests: the real default model, loaded once per session.

ONE suite for both runtimes: ``local_backend`` (and every fixture built on it) is parametrised
over ``"llama.cpp"`` and ``"torch"``, so each engine test runs on both; select one with
``-k llama`` or ``-k torch``. The torch runtime's first run converts the GGUF to safetensors in
the fieldstream cache (tens of seconds); later runs load the converted copy in a few seconds.
One thread: on a small CPU shared with other work, one thread decodes faster than several.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from sdk._local import LocalBackend
from sdk._local._engine import Engine
from sdk._local._model import RUNTIMES, Runtime, default_gguf_path, gguf_tokenizer
from sdk._local._xgr_masks import JsonFormat
from tests.sdk.local._local_support import crowded, import_llguidance_hf


@pytest.fixture(scope="session", params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> Runtime:
    """The runtime the engine tests run on (each test runs on every one)."""
    value: Runtime = request.param
    return value


@pytest.fixture(scope="session")
def local_backend(runtime: Runtime) -> LocalBackend:
    """The default model with jump-forward on, loaded once for the whole session."""
    backend = LocalBackend(threads=1, runtime=runtime)
    engine = backend.load()
    assert engine.loaded.runtime == runtime  # no silent fallback in the suite
    return backend


@pytest.fixture(scope="session")
def plain_backend(local_backend: LocalBackend) -> LocalBackend:
    """The same weights (shared, not loaded again) with jump-forward off."""
    backend = LocalBackend(jump_forward=False, threads=1, runtime=local_backend.runtime)
    backend.load()
    return backend


@pytest.fixture(scope="session")
def engine(local_backend: LocalBackend) -> Engine:
    """The engine behind ``local_backend`` (model, tokenizer, grammars)."""
    return local_backend.load()


@pytest.fixture(scope="session")
def layout_backends(
    local_backend: LocalBackend,
) -> Callable[[str], tuple[LocalBackend, LocalBackend]]:
    """``layout_backends(json_format)``: backends with jump-forward on and off for that layout
    (the same weights; one engine per layout, built once)."""
    made: dict[str, tuple[LocalBackend, LocalBackend]] = {}

    def get(json_format: str) -> tuple[LocalBackend, LocalBackend]:
        if json_format not in made:
            runtime, layout = local_backend.runtime, cast(JsonFormat, json_format)
            on = LocalBackend(threads=1, json_format=layout, runtime=runtime)
            off = LocalBackend(threads=1, json_format=layout, jump_forward=False, runtime=runtime)
            on.load()
            off.load()
            made[json_format] = (on, off)
        return made[json_format]

    return get


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    """The default model's transformers tokenizer (read out of the GGUF once; needs the torch
    extra's transformers): what the grammar tests tokenize with, and what llguidance's
    Hugging Face bridge reads."""
    return gguf_tokenizer(default_gguf_path())


@pytest.fixture(scope="session")
def ll_tokenizer(tokenizer: Any) -> Any:
    """llguidance's tokenizer of :func:`tokenizer`, through its Hugging Face bridge."""
    return import_llguidance_hf().from_tokenizer(tokenizer)


@pytest.fixture(params=[False, True], ids=["alone", "full-batch"])
def crowd(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Each generation of the test alone, then in a full batch (``_local_support.collect``
    runs it beside generations that keep every other slot busy): the engine suite's modules
    that ask for it (``pytestmark = pytest.mark.usefixtures("crowd")``) run both ways, on
    both runtimes."""
    on: bool = request.param
    crowded(on)
    try:
        yield on
    finally:
        crowded(False)
