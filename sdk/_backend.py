"""What a backend hands the stream: :class:`Delta` values, and the :class:`Backend` protocol.

A backend turns one generation request into an async iterator of deltas. Closing the iterator
(``aclose()``) must stop the generation at once: close the HTTP response, or stop the local
engine's decoding loop. The stream layer above never needs to know which backend it reads.

Rewinding (backtracking). A generation that can go back on its own output is :class:`Rewindable`:
between two deltas its consumer may ``await gen.rewind(offset)``, a character offset into the
text the generation has yielded. The generation drops its output after the last token boundary
at or before ``offset``, rules out (by default) the continuation it had written there, and the
next deltas continue from that boundary: the :class:`Rewound` answer says where. The local
engine's generations are rewindable (``sdk/_local/_backend.py``); HTTP ones are not (a server
cannot be sent back), so a caller tests ``isinstance(gen, Rewindable)`` and falls back to a
fresh attempt otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias, runtime_checkable

from sdk._errors import UnsupportedConstraint

if TYPE_CHECKING:
    from sdk._constraints import Constraint, Tool, ToolChoice
    from sdk._server_policy import ServerPolicy

__all__ = [
    "CONTENT_FILTER",
    "CURES",
    "FINISH_REASONS",
    "LENGTH",
    "MALFORMED",
    "STOP",
    "TOOL_CALLS",
    "Backend",
    "Chunk",
    "Delta",
    "GenerationRequest",
    "Message",
    "Mode",
    "Rewindable",
    "Rewound",
    "TextChunks",
    "Usage",
    "check_request",
    "server_shows_schema",
]

Message = Mapping[str, Any]
"""One chat message, as the OpenAI Chat Completions API spells it (``{"role", "content"}``)."""

# The finish reasons the client acts on, in the words of OpenAI's Chat Completions API (and one
# of its own, MALFORMED). Every backend reports its provider's stop reasons in these words, by
# one table per provider (``STOP_REASONS`` in each ``sdk/_http/<provider>/`` decoder; docs/
# errors.md draws them); a reason no word fits passes through as it came
# (``Delta.finish_reason`` is any ``str``): a document it leaves unfinished is a TruncatedError
# whose ``reason`` is that word.
STOP: Final = "stop"
"""The model ended its output."""
LENGTH: Final = "length"
"""The token limit (``max_tokens``) ended the output."""
TOOL_CALLS: Final = "tool_calls"
"""The output ended after its tool calls."""
CONTENT_FILTER: Final = "content_filter"
"""The provider's content filter stopped the output."""
MALFORMED: Final = "malformed"
"""The provider could not read what the model wrote, and said so instead of passing it on
(Gemini's ``MALFORMED_FUNCTION_CALL``): a document left unfinished is an
:class:`~sdk.OutputSyntaxError` naming the provider's reason."""
FINISH_REASONS: Final = (STOP, LENGTH, TOOL_CALLS, CONTENT_FILTER, MALFORMED)
"""Every finish reason above."""

Mode: TypeAlias = Literal["json_schema", "json_object", "tool", "none"]
"""How a request's schema is sent (:attr:`GenerationRequest.mode`; the ``mode`` option and the
command line's ``--mode`` read the words from here)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one attempt (or the sum of several: ``a + b``, details key by key)."""

    prompt_tokens: int = 0
    """Tokens in the prompt."""
    completion_tokens: int = 0
    """Tokens generated."""
    forced_tokens: int = 0
    """Of the generated tokens, those the grammar forced (local engine jump-forward)."""
    estimated: bool = False
    """True when some count is the stream's own estimate, not the backend's report: an
    attempt aborted before a server sent its usage is counted one token per text delta
    received (servers stream about one token per delta), and its prompt, which the server
    read and bills, from the request's size (about four bytes of the request body a token)."""
    prompt_tokens_details: Mapping[str, int] = field(default_factory=dict)
    """Every detail of the prompt's count the server sent (``cached_tokens``,
    ``audio_tokens``; the Responses API's ``input_tokens_details``)."""
    completion_tokens_details: Mapping[str, int] = field(default_factory=dict)
    """Every detail of the completion's count the server sent (``reasoning_tokens``,
    ``audio_tokens``, ``accepted_prediction_tokens``, ``rejected_prediction_tokens``; the
    Responses API's ``output_tokens_details``)."""

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def __hash__(self) -> int:  # the details are dicts: hashed by their items
        return hash(
            (
                self.prompt_tokens,
                self.completion_tokens,
                self.forced_tokens,
                self.estimated,
                tuple(sorted(self.prompt_tokens_details.items())),
                tuple(sorted(self.completion_tokens_details.items())),
            )
        )

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens the server read from its cache (``prompt_tokens_details``)."""
        return self.prompt_tokens_details.get("cached_tokens", 0)

    @property
    def reasoning_tokens(self) -> int:
        """Completion tokens spent reasoning (``completion_tokens_details``)."""
        return self.completion_tokens_details.get("reasoning_tokens", 0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.forced_tokens + other.forced_tokens,
            self.estimated or other.estimated,
            _combine(self.prompt_tokens_details, other.prompt_tokens_details, 1),
            _combine(self.completion_tokens_details, other.completion_tokens_details, 1),
        )

    def __sub__(self, other: Usage) -> Usage:
        """What ``self`` counted beyond ``other`` (never below zero)."""
        return Usage(
            max(self.prompt_tokens - other.prompt_tokens, 0),
            max(self.completion_tokens - other.completion_tokens, 0),
            max(self.forced_tokens - other.forced_tokens, 0),
            self.estimated,
            _combine(self.prompt_tokens_details, other.prompt_tokens_details, -1),
            _combine(self.completion_tokens_details, other.completion_tokens_details, -1),
        )


def _combine(a: Mapping[str, int], b: Mapping[str, int], sign: int) -> dict[str, int]:
    """``a`` plus (``sign`` 1) or minus (-1, never below zero) ``b``, key by key."""
    if not b:
        return dict(a)
    out = dict(a)
    for key, value in b.items():
        out[key] = max(out.get(key, 0) + sign * value, 0)
    return out


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of a generation, in order. Most deltas carry only ``text``."""

    text: str = ""
    """Generated text (the JSON document's next characters)."""
    forced: bool = False
    """True when the grammar alone decided this text (no sampling: jump-forward)."""
    tool_call: int | None = None
    """Index of the parallel tool call this text belongs to; ``None`` for message content."""
    tool_name: str | None = None
    """The function name of that tool call, on its first delta."""
    tool_call_id: str | None = None
    """The id the server gave that tool call, on its first delta (when it sends one)."""
    refusal: str | None = None
    """A piece of a refusal message (OpenAI ``delta.refusal``)."""
    reasoning: str | None = None
    """A piece of the model's reasoning (``delta.reasoning_content`` / ``delta.reasoning``):
    kept apart, never parsed."""
    finish_reason: str | None = None
    """Why the generation ended, on the last delta: ``stop``, ``length``, ``content_filter``,
    ``tool_calls``, ``malformed``, or a provider's own word that none of them fits."""
    usage: Usage | None = None
    """Token usage so far, usually on the last delta (a later report replaces an earlier one)."""
    tokens: int | None = None
    """How many generated tokens ``text`` came from, when the backend knows (the local engine
    does); ``None``: the stream counts one per delta with text, as an estimate."""
    logprobs: tuple[Mapping[str, Any], ...] | None = None
    """The log probabilities of ``text``'s tokens, when they were asked for (``logprobs=True``):
    the server's entries as it sent them (openai's ``ChatCompletionTokenLogprob``: ``token``,
    ``logprob``, ``bytes``, ``top_logprobs``)."""
    response: Mapping[str, Any] | None = None
    """What the server said about the response, once (its ``id``, ``system_fingerprint``,
    ``model``, ``service_tier``: those it sent; and, on the finishing delta, ``stop_reason``,
    the provider's own word when ``finish_reason`` is another one, with ``stop_message``,
    what the provider said about it, when it said something)."""


Chunk: TypeAlias = str | Delta
"""What a source yields: a ``str`` is a delta of text alone (``Delta(text=chunk)``)."""


class TextChunks:
    """The deltas of a generation, over ``chunks``: an async generator of chunks, in which a
    ``str`` is a delta of text alone (``Delta(text=chunk)``). Iterated, it gives
    :class:`~sdk.Delta` values; :class:`SourceReader` reads ``chunks`` itself (the stream takes
    a ``str`` as that delta). ``aclose()`` closes ``chunks``: the generation stops.
    ``prompt_estimate``: the backend's estimate of the request's prompt tokens, counted for an
    attempt that produced output but ended before the server reported its usage.
    ``server_policy``: what the backend knows of the constraint its server applies
    (:class:`sdk._server_policy.ServerPolicy`; set by the backend, ``None`` when it says
    nothing)."""

    __slots__ = ("chunks", "prompt_estimate", "server_policy")

    def __init__(
        self, chunks: AsyncGenerator[Chunk, None], *, prompt_estimate: int | None = None
    ) -> None:
        self.chunks = chunks
        self.prompt_estimate = prompt_estimate
        self.server_policy: ServerPolicy | None = None

    def __aiter__(self) -> TextChunks:
        return self

    async def __anext__(self) -> Delta:
        chunk = await self.chunks.__anext__()  # StopAsyncIteration ends this too
        return Delta(text=chunk) if isinstance(chunk, str) else chunk

    async def aclose(self) -> None:
        await self.chunks.aclose()


CURES: Final[Mapping[str, str]] = {
    "compact_whitespace": "ask the server for JSON without free whitespace between tokens",
    "less_repetition": "discourage repeating what was written (a frequency penalty, where the "
    "server has one)",
    "no_thinking": "turn the model's thinking off, so that the constrained answer is the "
    "content, not the reasoning (chat_template_kwargs enable_thinking false to vLLM "
    "and llama.cpp; think false to Ollama)",
    "allow_thinking": "send no think=false (Ollama applies format only to a thinking model "
    "that may think: ollama #14645, #15260)",
}
"""The fixes a retry can ask of a backend (:attr:`GenerationRequest.cures`), by name, with what
each does; an error names the one that would have prevented it (:attr:`sdk.StreamError.cure`).
Which server applies which, and how: ``docs/retries.md``."""


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """Everything a backend needs to start one attempt."""

    messages: tuple[Message, ...]
    """The conversation, feedback of earlier attempts included."""
    schema: Mapping[str, Any]
    """The JSON Schema the output must follow (already resolved from a model or type)."""
    schema_name: str = "response"
    """A name for the schema (``response_format.json_schema.name``, or the tool's name)."""
    mode: Mode = "json_schema"
    """How the schema is sent: ``response_format`` json_schema (strict), ``json_object``
    (with the schema beside it to llama.cpp only), as a forced tool call, or not at all (plain
    prompt)."""
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Backend-specific parameters passed through as they are (e.g. vLLM's
    ``structured_outputs``)."""
    constraint: Constraint | None = None
    """A constraint other than JSON Schema (:class:`~sdk.Choice`, :class:`~sdk.Regex`,
    :class:`~sdk.Grammar`, :class:`~sdk.StructuralTag`); ``schema`` then describes only the
    result's type. A backend that cannot send it says so in ``check_request`` (see
    :func:`check_request`)."""
    tools: tuple[Tool, ...] = ()
    """Several tools (``mode == "tool"``), each with its own schema: the model calls one or more
    of them; ``schema`` then describes only what any call's arguments satisfy."""
    lenient: bool = False
    """The stream reads the output leniently (``lenient=True``: prose or a code fence around the
    document is skipped), so a backend must not refuse output for not beginning as JSON."""
    tool_choice: ToolChoice | None = None
    """How the model may use ``tools``: ``None`` forces a call (one tool by name, several
    ``"required"``); ``"auto"``, ``"none"``, ``"required"`` or a named tool (Chat Completions'
    form, as :func:`sdk._constraints.tool_choice_of` returns it) as the caller said."""
    model: str | None = None
    """The model for this request, instead of the backend's (HTTP backends)."""
    timeout: Any = None
    """Seconds, or an ``httpx.Timeout``, for this request instead of the client's (HTTP
    backends); ``None``: the client's."""
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    """Headers added to this request (HTTP backends), over the client's."""
    extra_query: Mapping[str, str] = field(default_factory=dict)
    """Query parameters added to this request's URL (HTTP backends), over the client's."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """The other request parameters openai-python names, as the caller gave them (checked:
    :func:`sdk._parameters.check_parameters`; ``max_completion_tokens``, ``stop``,
    ``logprobs``, ``reasoning_effort``...): each provider writes them its own way, and its
    ``check_request`` refuses one its API has no equivalent for."""
    cures: frozenset[str] = frozenset()
    """The fixes this attempt asks for (names from :data:`CURES`), because an earlier attempt
    failed in a way the request can prevent (a runaway of whitespace...): each backend applies
    those its server has a setting for and ignores the rest; empty on a first attempt."""


def check_request(backend: object, request: GenerationRequest) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` when ``backend`` cannot send ``request``
    (called by :meth:`sdk.Client.stream`, before any request).

    A backend that knows what it can send defines ``check_request(request)``; one that does
    not is taken to send JSON Schema only (one schema, one tool at most), as the protocol
    required before constraints existed.
    """
    own = getattr(backend, "check_request", None)
    if own is not None:
        own(request)
        return
    if request.constraint is not None or len(request.tools) > 1:
        what = type(request.constraint).__name__ if request.constraint else "several tools"
        raise UnsupportedConstraint(
            f"{type(backend).__name__} does not say it can send {what} (a backend that can "
            "defines check_request(request)); mode='none' sends nothing and checks the output "
            "on the client only"
        )


def server_shows_schema(backend: object, request: GenerationRequest) -> bool:
    """Whether ``backend``'s server shows ``request.schema`` to the model itself (asked by
    :meth:`sdk.Client.stream` for a request of one JSON Schema, to decide whether
    ``show_schema=None`` adds it to the conversation: :mod:`sdk._schema_prompt`).

    A backend that knows defines ``shows_schema(request)``: the built-in ones say yes where the
    schema reaches the model as more than a grammar (OpenAI's structured outputs, Anthropic's
    and Gemini's schema modes, a schema sent as a tool) and no where it does not (the local
    engine, Ollama, OpenAI-compatible servers other than OpenAI, ``mode="json_object"`` and
    ``"none"``). One that does not is taken to show it: its requests keep the conversation as
    the caller wrote it (``show_schema=True`` adds the schema anyway).
    """
    own = getattr(backend, "shows_schema", None)
    return True if own is None else bool(own(request))


class Backend(Protocol):
    """Anything that can run a generation. ``generate`` returns an async generator of deltas;
    closing it stops the generation (the server stops decoding, the engine's loop stops)."""

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Rewound:
    """What a rewind did. The output now ends at ``offset``; the next delta continues there."""

    offset: int
    """Character offset the output was cut back to: the last token boundary at or before
    ``requested`` (so ``offset <= requested``). The text between them is written again, and may
    come out different."""
    requested: int
    """The offset the caller asked for."""
    dropped_tokens: int
    """Tokens decoded and discarded by this rewind (they still count in the final usage)."""
    banned: str | None
    """The text the output may no longer begin with at ``offset`` (this rewind's ban; earlier
    rewinds to the same place keep theirs), or None when nothing was ruled out: the text after
    ``requested`` was all forced by the grammar, or the caller asked for no ban."""


@runtime_checkable
class Rewindable(Protocol):
    """A generation (an async iterator of deltas) that can go back on its output.

    ``rewind`` may be called between two deltas, not while one is being awaited, and also after
    the delta that carries ``finish_reason`` as long as the iterator has not been asked for more
    (a finished generation that is rewound goes on). ``ban=False`` only rewinds (useful with
    sampling). Raises ``ValueError`` for an offset outside the output, ``StreamUsageError``
    when the generation is closed or over.
    """

    async def rewind(self, offset: int, *, ban: bool = True) -> Rewound: ...
