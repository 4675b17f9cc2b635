"""One loaded model ready to serve requests: prompt building, grammars, the decode loop.

An :class:`Engine` is what a :class:`~sdk._local.LocalBackend` drives. Everything here is
synchronous and blocking; the backend runs it in worker threads. The steps of concurrent
generations on one model are decoded together, one forward pass for all of them, by the
model's scheduler (``_scheduler``: its slots, its fair queue, its rounds).
"""

from __future__ import annotations

import threading
from typing import Any

from sdk._backend import GenerationRequest, Rewound
from sdk._constraints import Choice, Grammar, Regex
from sdk._errors import BackendError
from sdk._local._bans import VocabIndex
from sdk._local._constrain import spec_of
from sdk._local._decode import DecodeStats, Generation, StepOutput
from sdk._local._drafts import DraftMemory
from sdk._local._llama_tokenizer import LlamaTokenizer
from sdk._local._llg_masks import LlgGrammars
from sdk._local._model import LoadedModel
from sdk._local._prompt import prompt_ids
from sdk._local._sampling import sampler_for
from sdk._local._tools import prompt_messages, template_takes_tools
from sdk._local._xgr_masks import Grammars, JsonFormat

__all__ = ["Engine", "grammars_for"]


def grammars_for(
    loaded: LoadedModel,
    json_format: JsonFormat,
    stop_ids: frozenset[int],
    budget: float | None = None,
) -> Grammars | LlgGrammars:
    """The masks of ``loaded``'s runtime: llguidance's over llama.cpp's own vocabulary on the
    llama.cpp runtime (numpy logits, no torch: ``_llg_grammar``), xgrammar's over the
    transformers tokenizer on torch (``_grammar``)."""
    tokenizer, forward = loaded.tokenizer, loaded.forward
    if isinstance(tokenizer, LlamaTokenizer):
        return LlgGrammars(
            tokenizer.ll_tokenizer(),
            forward.vocab_size,
            tokenizer.vocab_bytes,
            json_format=json_format,
            stop_token_ids=stop_ids,
            budget=budget,
        )
    return Grammars(
        tokenizer,
        forward.vocab_size,
        json_format=json_format,
        stop_token_ids=stop_ids,
        budget=budget,
    )


class Engine:
    """A model, its tokenizer and its grammar compiler; its generations decode together in the
    model's scheduler."""

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        json_format: JsonFormat = "bounded",
        mask_compile_budget: float | None = None,
    ) -> None:
        self.loaded = loaded
        forward, tokenizer = loaded.forward, loaded.tokenizer
        self.stop_ids: frozenset[int] = _eos_ids(forward.stop_token_ids, tokenizer)
        """Tokens that end a generation."""
        self.grammars = grammars_for(loaded, json_format, self.stop_ids, mask_compile_budget)
        """The masks (see :func:`grammars_for`)."""
        self.context_length: int | None = forward.context_length
        self.draft_memory = DraftMemory()
        """How the model wrote each forced text last time, shared by this engine's generations
        (jump-forward drafts it; see ``_drafts``)."""
        self.scheduler = loaded.scheduler
        """The slots, queue and rounds of the model (shared by the engines of one model)."""
        self._vocab_index: VocabIndex | None = None
        self._index_lock = threading.Lock()

    @property
    def busy(self) -> bool:
        """True while a worker thread is inside a decoding step of this engine's model."""
        return self.scheduler.busy

    def prompt_ids(
        self, request: GenerationRequest, *, special_tokens_in_content: bool = False
    ) -> list[int]:
        """The request's conversation, through the tokenizer's chat template, as token ids
        (with the tools and the format of their calls for a ``tools`` request: ``_tools``);
        special-token strings in the messages are plain text unless
        ``special_tokens_in_content`` (``_prompt``)."""
        tokenizer = self.loaded.tokenizer
        if not getattr(tokenizer, "chat_template", None):
            raise BackendError(
                f"the tokenizer of {self.loaded.source!r} has no chat template; use a chat "
                "(instruct) model"
            )
        messages = [dict(m) for m in request.messages]
        extra: dict[str, Any] = {}
        if request.tools:
            messages, listing = prompt_messages(
                messages,
                request.tools,
                template_takes_tools=template_takes_tools(tokenizer.chat_template),
            )
            if listing is not None:
                extra["tools"] = listing
        return prompt_ids(
            tokenizer, messages, extra, special_tokens_in_content=special_tokens_in_content
        )

    def start(
        self,
        request: GenerationRequest,
        *,
        jump_forward: bool,
        default_max_tokens: int,
        stats: DecodeStats,
        special_tokens_in_content: bool = False,
    ) -> Generation:
        """Prepare one generation (tokenize, compile the schema or constraint) and return it.

        Nothing is decoded until the caller runs :meth:`step` (or iterates the generation).
        """
        prompt = self.prompt_ids(request, special_tokens_in_content=special_tokens_in_content)
        limit = request.max_tokens or request.parameters.get("max_completion_tokens")
        max_tokens = limit if limit is not None else default_max_tokens
        if self.context_length is not None:
            if len(prompt) >= self.context_length:
                raise BackendError(
                    f"the prompt is {len(prompt)} tokens and the model's context holds "
                    f"{self.context_length}: no room is left for the output (shorten the "
                    "messages, or the tools and schema they carry)"
                )
            max_tokens = min(max_tokens, self.context_length - len(prompt))
        constraint = None
        spec = spec_of(request)
        if spec is not None:
            try:
                constraint = self.grammars.constraint_for(spec, self.loaded.tokenizer)
            except (RuntimeError, ValueError) as exc:
                what = "schema" if spec.kind == "json_schema" else "constraint"
                raise BackendError(f"the local engine cannot compile the {what}: {exc}") from exc
        try:
            sampler = sampler_for(
                self.loaded.runtime,
                temperature=request.temperature,
                top_p=request.top_p,
                seed=request.seed,
                device=self.loaded.device,
                cures=request.cures,  # a retry's less_repetition: a penalty (_sampling.py)
            )
        except ValueError as exc:
            raise BackendError(str(exc)) from exc
        return Generation(
            self.loaded.forward.sequence(),
            prompt,
            sampler=sampler,
            decoded_vocab=self.grammars.decoded_vocab,
            stop_ids=self.stop_ids,
            max_tokens=max_tokens,
            constraint=constraint,
            jump_forward=jump_forward,
            stats=stats,
            draft_memory=self.draft_memory,
            # A Choice, Regex or Grammar writes text, not a JSON value (what a rewind bans).
            text_output=isinstance(request.constraint, Choice | Regex | Grammar),
        )

    def admit(self, generation: Generation) -> bool:
        """Block until ``generation`` holds one of the model's slots (``Scheduler.admit``)."""
        return self.scheduler.admit(generation)

    def step(self, generation: Generation) -> StepOutput:
        """Run the next step of ``generation`` (blocking) in a round with the model's other
        active generations, and return what it wrote (it is admitted first if it holds no
        slot yet)."""
        return self.scheduler.step(generation)

    def release(self, generation: Generation) -> None:
        """Close ``generation`` and give its slot (or its place in the queue) back."""
        generation.close()
        self.scheduler.release(generation)

    def rewind(self, generation: Generation, offset: int, *, ban: bool = True) -> Rewound:
        """Rewind ``generation`` to character ``offset`` (see :meth:`Generation.rewind`; the
        KV cache is cut at its next step, so this runs beside the others' rounds)."""
        if generation.vocab_index is None:
            generation.vocab_index = self.vocab_index()
        return generation.rewind(offset, ban=ban)

    def vocab_index(self) -> VocabIndex:
        """The tokenizer's vocabulary sorted by bytes, for rewind bans (built once, on demand)."""
        with self._index_lock:
            if self._vocab_index is None:
                self._vocab_index = VocabIndex(self.grammars.decoded_vocab)
            return self._vocab_index


def _eos_ids(model_ids: frozenset[int], tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set(model_ids)
    value = getattr(tokenizer, "eos_token_id", None)
    if isinstance(value, int):
        ids.add(value)
    elif isinstance(value, list | tuple):
        ids.update(int(v) for v in value)
    if not ids:
        raise BackendError("the local model's tokenizer defines no end-of-sequence token")
    return frozenset(ids)
