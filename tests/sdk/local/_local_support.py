"""Helpers of the local-engine tests: schemas, prompts, requests, collecting a generation."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import partial
from sdk._backend import Delta, GenerationRequest
from sdk._constraints import Constraint, Tool
from sdk._local import LocalBackend
from sdk._local._engine import Engine
from sdk._local._llama_tokenizer import LlamaTokenizer
from sdk._local._xgr_masks import Grammars

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
ENUM = {
    "type": "object",
    "properties": {"mood": {"enum": ["happy", "sad", "angry"]}},
    "required": ["mood"],
    "additionalProperties": False,
}
NESTED = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 20},
        "author": {
            "type": "object",
            "properties": {
                "first": {"type": "string", "maxLength": 12},
                "born": {"type": "integer", "minimum": 0, "maximum": 2100},
            },
            "required": ["first", "born"],
            "additionalProperties": False,
        },
    },
    "required": ["title", "author"],
    "additionalProperties": False,
}
TAGS = {
    "type": "object",
    "properties": {
        "tags": {
            "type": "array",
            "items": {"type": "string", "maxLength": 10},
            "maxItems": 3,
        }
    },
    "required": ["tags"],
    "additionalProperties": False,
}
ROOT_ARRAY = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": 999},
    "minItems": 1,
    "maxItems": 4,
}
FLAGS = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "stars": {"type": "integer", "minimum": 1, "maximum": 5},
        "note": {"anyOf": [{"type": "string", "maxLength": 16}, {"type": "null"}]},
    },
    "required": ["ok", "stars", "note"],
    "additionalProperties": False,
}
TAGS4 = {
    "type": "object",
    "properties": {
        "tags": {
            "type": "array",
            "items": {"type": "string", "maxLength": 24},
            "minItems": 2,
            "maxItems": 4,
        }
    },
    "required": ["tags"],
    "additionalProperties": False,
}
TEXT = {
    "type": "object",
    "properties": {"reply": {"type": "string", "maxLength": 40}},
    "required": ["reply"],
    "additionalProperties": False,
}

CASES: dict[str, tuple[dict[str, Any], str]] = {
    "person": (PERSON, "Invent a person. Reply as JSON."),
    "person-prose": (PERSON, "Write me a long poem about the sea. Do not use JSON."),
    "enum": (ENUM, "How do you feel today?"),
    "enum-prose": (ENUM, "Explain quantum physics in three paragraphs."),
    "nested": (NESTED, "Give a book title and its author's first name and birth year."),
    "array-maxitems": (TAGS, "List ten tags for a blog post about cooking."),
    "root-array": (ROOT_ARRAY, "Count from 1 to 100."),
    "flags": (FLAGS, "Rate the movie 'The Matrix' and say if it is good."),
}


def import_llguidance_hf() -> Any:
    """``llguidance.hf`` (llguidance's Hugging Face bridge), or skip the calling test module:
    the bridge imports transformers, which comes with the torch extra, not the local one."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        pytest.skip(
            "needs transformers (the torch extra) for llguidance's Hugging Face tokenizer",
            allow_module_level=True,
        )
    return pytest.importorskip("llguidance.hf", reason="needs llguidance (the local extra)")


def request_for(
    prompt: str,
    schema: dict[str, Any],
    *,
    mode: str = "json_schema",
    max_tokens: int = 64,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
) -> GenerationRequest:
    return GenerationRequest(
        messages=({"role": "user", "content": prompt},),
        schema=schema,
        mode=mode,  # type: ignore[arg-type]
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
    )


def constrained(
    prompt: str,
    constraint: Constraint | None = None,
    *,
    tools: Sequence[Tool] = (),
    max_tokens: int = 48,
) -> GenerationRequest:
    """A greedy request under a constraint (Choice, Regex, Grammar, StructuralTag) or tools."""
    return GenerationRequest(
        messages=({"role": "user", "content": prompt},),
        schema={"type": "string"},
        mode="tool" if tools else "json_schema",
        max_tokens=max_tokens,
        constraint=constraint,
        tools=tuple(tools),
    )


_CROWDED: list[bool] = [False]
"""Whether :func:`collect` runs each generation in a full batch (the ``crowd`` fixture)."""


def crowded(on: bool) -> None:
    """Make :func:`collect` run each generation alone (False) or in a full batch (True)."""
    _CROWDED[0] = on


def drafts_expected(backend: LocalBackend) -> bool:
    """Whether a generation with jump-forward on proposes drafts here: alone, or beside others
    on the torch runtime (on llama.cpp a shared round proposes none: ``_scheduler``)."""
    return not _CROWDED[0] or backend.load().loaded.runtime != "llama.cpp"


def companion(i: int) -> GenerationRequest:
    """The ``i``-th generation that keeps a crowded backend's other slots busy: free text, a
    schema, a seeded sample, in turn, long enough to outlast most tests' generations."""
    kinds = [
        request_for(f"Write a long story about a lighthouse, part {i}.", TEXT, max_tokens=400),
        request_for(f"Invent a person, number {i}.", PERSON, max_tokens=400),
        request_for(
            f"Write a poem about rivers, verse {i}.", TEXT, max_tokens=400, seed=i, temperature=0.9
        ),
    ]
    return kinds[i % len(kinds)]


async def deltas_of(backend: LocalBackend, request: GenerationRequest) -> list[Delta]:
    """Every delta of one generation on ``backend``."""
    return [delta async for delta in backend.generate(request)]


async def all_at_once(
    backend: LocalBackend, requests: Sequence[GenerationRequest]
) -> list[list[Delta]]:
    """Every delta of each of ``requests``, all started at once on ``backend`` (in order)."""
    out: list[list[Delta]] = [[] for _ in requests]

    async def run(i: int) -> None:
        out[i] = await deltas_of(backend, requests[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(requests)):
            tg.start_soon(run, i)
    return out


def sibling(backend: LocalBackend) -> LocalBackend:
    """A backend of its own over ``backend``'s loaded model (the same slots, one scheduler):
    generations through it share the rounds, and ``backend.last_stats`` stays the test's."""
    others = LocalBackend(
        backend.model,
        backend.device,
        threads=1,
        runtime=backend.runtime,
        slots=backend.slots,
        context=backend.context,
    )
    assert others.load().loaded is backend.load().loaded
    return others


@asynccontextmanager
async def beside_others(backend: LocalBackend) -> AsyncIterator[None]:
    """Crowded (:func:`crowded`), run the body beside ``backend.slots - 1`` generations that
    keep every other slot busy (each started again when it ends; cancelled when the body is
    done); alone, just the body. An exception of the body is raised as it is, not in the task
    group's ExceptionGroup."""
    if not _CROWDED[0]:
        yield
        return
    others = sibling(backend)

    async def keep_busy(i: int) -> None:
        while True:
            async for _ in others.generate(companion(i)):
                pass

    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        for i in range(backend.slots - 1):
            tg.start_soon(keep_busy, i)
        await anyio.sleep(0.05)  # the companions take their slots first
        try:
            yield
        except Exception as exc:
            failure = exc
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure


def deterministic(request: GenerationRequest) -> bool:
    """Whether ``request`` writes one text whatever runs beside it: greedy, or seeded."""
    return not request.temperature or request.seed is not None


_alone: weakref.WeakKeyDictionary[LocalBackend, dict[str, str]] = weakref.WeakKeyDictionary()
"""Each live backend's texts written alone, by case (:func:`as_alone`)."""


async def alone_first(backend: LocalBackend, key: str, run: Callable[[], Awaitable[str]]) -> None:
    """Crowded (:func:`crowded`) and with no text recorded for case ``key`` on ``backend``,
    await ``run()`` (which must run the case alone and return its text) and record its text,
    before the full batch runs it: what :func:`as_alone` compares with. (Alone first: on
    llama.cpp a request run alone right after it ran in a full batch wrote another text once,
    test_tools' calls, likely from its prompt's cache copied from a slot the batch decoded;
    and ``last_stats`` stays the full batch's generation's.)"""
    texts = _alone.setdefault(backend, {})
    if _CROWDED[0] and key not in texts:
        crowded(False)
        try:
            texts[key] = await run()
        finally:
            crowded(True)


def as_alone(backend: LocalBackend, key: str, text: str) -> None:
    """Check that a greedy or seeded generation writes the same ``text`` in a full batch as
    alone: alone (not :func:`crowded`), record ``text`` as what case ``key`` writes on
    ``backend`` (unless recorded); crowded, assert it is the recorded text (recorded alone or
    by :func:`alone_first`)."""
    texts = _alone.setdefault(backend, {})
    if not _CROWDED[0]:
        texts.setdefault(key, text)
        return
    assert text == texts[key], f"in a full batch {text!r}, alone {texts[key]!r}"


def collect(backend: LocalBackend, request: GenerationRequest) -> list[Delta]:
    """Every delta of one generation (run on asyncio, for sync tests). Crowded
    (:func:`crowded`), the generation runs :func:`beside_others`, and what it writes must not
    depend on them: a greedy or seeded request's text is checked against the text it writes
    alone (:func:`alone_first`, :func:`as_alone`; keyed by the request's ``repr``)."""

    async def alone() -> list[Delta]:
        return await deltas_of(backend, request)

    async def in_a_full_batch() -> list[Delta]:
        async with beside_others(backend):
            return await alone()

    key = repr(request)

    async def text_alone() -> str:
        return text_of(await alone())

    if deterministic(request):
        anyio.run(alone_first, backend, key, text_alone)
    deltas = anyio.run(in_a_full_batch if _CROWDED[0] else alone)
    if deterministic(request):
        as_alone(backend, key, text_of(deltas))
    return deltas


_greedy: weakref.WeakKeyDictionary[LocalBackend, dict[str, list[Delta]]] = (
    weakref.WeakKeyDictionary()
)
"""Each live backend's greedy deltas by case. Keyed by the backend itself, not its ``id()``:
once a session fixture's backend is gone (the llama.cpp one, when the torch runtime's tests
begin), a new backend may get its address, and must not get its deltas."""


def greedy_case(backend: LocalBackend, case: str) -> list[Delta]:
    """The greedy deltas of ``CASES[case]`` on ``backend``, computed once per backend."""
    cases = _greedy.setdefault(backend, {})
    key = f"{case} crowded" if _CROWDED[0] else case
    if key not in cases:
        schema, prompt = CASES[case]
        cases[key] = collect(backend, request_for(prompt, schema))
    return cases[key]


def text_of(deltas: Sequence[Delta]) -> str:
    return "".join(d.text for d in deltas)


def find_value(text: str, path: tuple[str | int, ...]) -> int | None:
    """The character offset where the value at ``path`` begins in ``text`` (what the tracker
    reports as the start of an offending value), or None if it has not begun."""
    parser = partial.Parser()
    for event in parser.feed(text):
        if isinstance(event, partial.ValueStart) and event.path == path:
            return event.offset
    return None


def value_start(text: str, path: tuple[str | int, ...]) -> int:
    """:func:`find_value`, for a value that must be there."""
    offset = find_value(text, path)
    assert offset is not None, f"no value at {path} in {text!r}"
    return offset


def special_token_ids(engine: Engine) -> frozenset[int]:
    """Added/special tokens no grammar may produce, on either runtime: xgrammar's extra mask
    on torch; on llama.cpp the control tokens llguidance's tokenizer marks (``0xff``)."""
    tokenizer = engine.loaded.tokenizer
    if isinstance(tokenizer, LlamaTokenizer):
        return frozenset(tokenizer.control_ids) - engine.stop_ids
    assert isinstance(engine.grammars, Grammars)
    return engine.grammars.special_token_ids


def zero_logits(engine: Engine) -> Any:
    """A 1 x V row of zero logits of the kind the engine's runtime gives (numpy or torch)."""
    vocab = engine.grammars.vocab_size
    if engine.loaded.runtime == "llama.cpp":
        import numpy

        return numpy.zeros((1, vocab), dtype=numpy.float32)
    import torch

    return torch.zeros(1, vocab)
