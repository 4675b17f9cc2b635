"""The errors of the ``sdk`` package: one tree, rooted at :class:`StreamError`.

::

    Exception
    ├── StreamError                      every failure of a structured stream
    │   ├── OutputSyntaxError            the output is not JSON (wraps partial.JSONSyntaxError),
    │   │                                or the provider found it malformed (finish "malformed")
    │   │   └── ConstraintIgnored        the server dropped the constraint it claims to apply
    │   │                                (prose under a schema mask): cause, server, cure
    │   ├── SchemaViolation              the output breaks the schema (path, keyword, value, offset)
    │   │   └── ValidationFailed         the final pydantic validation of the whole value
    │   ├── PatternTimeout               a pattern check ran out of its time budget: the verdict
    │   │                                is unknown, the output not at fault (path, pattern)
    │   ├── TruncatedError               the output stopped early (finish_reason "length",
    │   │                                the source ended mid-document, or the provider stopped
    │   │                                it for a reason of its own): snapshot, open paths
    │   ├── RunawayOutput                the output degenerated without breaking the schema
    │   │   │                            (path, offset; cure names the retry's fix)
    │   │   ├── RunawayWhitespace        whitespace between tokens past any layout (length)
    │   │   └── RepeatedOutput           a string's or an array's tail repeats one unit
    │   │                                (unit, count)
    │   ├── RefusedError                 the model refused (the refusal text)
    │   ├── ContentFilteredError         the provider's content filter stopped the output
    │   ├── AnswerInReasoning            the document came in the reasoning, the content empty
    │   ├── TransportError               HTTP status / connection failure (status, retryable)
    │   │   ├── APIStatusError           a status not 2xx (status_code, response, body,
    │   │   │   │                        request_id), one class per family, as openai-python:
    │   │   │   ├── BadRequestError          400
    │   │   │   ├── AuthenticationError      401
    │   │   │   ├── PermissionDeniedError    403
    │   │   │   ├── NotFoundError            404
    │   │   │   ├── ConflictError            409
    │   │   │   ├── UnprocessableEntityError 422
    │   │   │   ├── RateLimitError           429
    │   │   │   └── InternalServerError      >= 500
    │   │   ├── APIConnectionError       the connection failed (no status)
    │   │   │   └── APITimeoutError      ... because it timed out
    │   │   └── PartialArgumentsError    path-addressed arguments (Vertex AI's partialArgs) that
    │   │                                make no JSON text: a path going back, a type changed...
    │   ├── BackendError                 a backend failed (local engine error, missing extra)
    │   │   └── MissingDependencyError   an optional extra is not installed (says what to install)
    │   ├── CallbackError                an on_field callback raised (its path and exception)
    │   └── RetriesExhausted             every attempt failed (the list of attempt errors)
    ├── RuntimeError
    │   └── StreamUsageError             misuse: iterating twice, two readers at once, ...
    │       └── UnsupportedConstraint    the backend cannot send this constraint (said before
    │                                    any request: OpenAI takes JSON Schema only)
    └── ValueError
        └── SchemaError                  the schema given cannot be used: not valid JSON Schema,
                                         or a keyword the tracker cannot check (keyword, pointer)

A :class:`PatternTimeout` is no :class:`SchemaViolation`: the pattern (the caller's) could not
be judged within ``regex_timeout``, so the output is not known to be wrong; it is not retried
(a retry would pay for a new answer that the same pattern may again fail to judge, and there
is nothing to tell the model) and is not fed back to the model.

Bad input (what the model or server sent) and misuse of the API are different branches:
a ``StreamError`` is about the output, a ``StreamUsageError`` about the caller's code, a
``SchemaError`` about the schema the caller gave (raised when it is compiled, before any output).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from partial import Path as Path  # re-exported: the sdk speaks of paths as partial does

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AnswerInReasoning",
    "AuthenticationError",
    "BackendError",
    "BadRequestError",
    "CallbackError",
    "ConflictError",
    "ConstraintIgnored",
    "ContentFilteredError",
    "InternalServerError",
    "MissingDependencyError",
    "NotFoundError",
    "OutputSyntaxError",
    "PartialArgumentsError",
    "PatternTimeout",
    "PermissionDeniedError",
    "RateLimitError",
    "RefusedError",
    "RepeatedOutput",
    "RetriesExhausted",
    "RunawayOutput",
    "RunawayWhitespace",
    "SchemaError",
    "SchemaViolation",
    "StreamError",
    "StreamUsageError",
    "TransportError",
    "TruncatedError",
    "UnprocessableEntityError",
    "UnsupportedConstraint",
    "ValidationFailed",
]


def pointer(path: Path) -> str:
    """The RFC 6901 JSON Pointer of a path: ``("items", 0, "a/b")`` -> ``"/items/0/a~1b"``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


class StreamError(Exception):
    """Root of every error about a stream's output or its transport.

    ``retryable`` says whether a fresh attempt may succeed (a retry policy consults it).

    An error in one tool call's arguments (a :class:`SchemaViolation`, an
    :class:`OutputSyntaxError`, a :class:`TruncatedError`, a call of a tool not offered) says
    which call broke: ``tool_call`` (the call's index in the reply, 0-based), ``tool_name`` and
    ``tool_call_id`` (when the server sent them); its message starts with them, e.g.
    ``tool call 1 ('search', id 'call_b'): /query: ...``. All three are ``None`` for an error
    in the message's own document, or one that is no call's.
    """

    retryable: bool = True
    cure: str | None = None
    """What the next attempt should change so that this error does not happen again (a name
    from :data:`sdk._backend.CURES`, e.g. ``"compact_whitespace"``), or ``None``: the same
    request, with feedback. The retry asks the backend for it on every later attempt
    (:attr:`sdk._backend.GenerationRequest.cures`)."""
    tool_call: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None

    def attribute(self, call: int, name: str | None, call_id: str | None) -> None:
        """Say that this error is tool call ``call``'s (named ``name``, with id ``call_id``);
        what was already said is kept (the first call to say it wins)."""
        if self.tool_call is None:
            self.tool_call = call
        if self.tool_name is None:
            self.tool_name = name
        if self.tool_call_id is None:
            self.tool_call_id = call_id

    @property
    def which_call(self) -> str:
        """The call this error is about, in words (``"tool call 1 ('search', id 'call_b')"``),
        or ``""`` when it is no tool call's."""
        if self.tool_call is None:
            return ""
        details = [repr(self.tool_name)] if self.tool_name is not None else []
        if self.tool_call_id is not None:
            details.append(f"id {self.tool_call_id!r}")
        return f"tool call {self.tool_call}" + (f" ({', '.join(details)})" if details else "")

    def _call_prefix(self) -> str:
        which = self.which_call
        return f"{which}: " if which else ""

    def __str__(self) -> str:
        return self._call_prefix() + super().__str__()


class OutputSyntaxError(StreamError):
    """The output is not valid JSON. ``cause`` is the parser's error (offset, line, column).

    Also raised, with no offset and no cause, when the provider found what the model wrote
    malformed and did not pass it on (``finish_reason == "malformed"``: Gemini's
    ``MALFORMED_FUNCTION_CALL``...) and the document is unfinished; the message names the
    provider's reason and what it said."""

    def __init__(self, message: str, *, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


class SchemaViolation(StreamError):
    """The output breaks the schema.

    Attributes: ``path`` (tuple), ``pointer`` (JSON Pointer), ``keyword`` (the JSON Schema
    keyword broken, e.g. ``"enum"``, ``"type"``, ``"maxLength"``), ``value`` (the offending value,
    or the prefix received so far for a string that streams), ``offset`` (character offset in the
    output at which the violation became certain), ``start`` (character offset where the
    offending value at ``path`` began — for a bad key, its opening quote; for a member a comma
    promised, the comma; for a failure found by validating an enclosing value as a whole, such
    as a nested pydantic model, that value's first character: everything before ``start`` can be
    kept, ``None`` when unknown), ``message`` (for a person).
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path = (),
        keyword: str = "",
        value: Any = None,
        offset: int | None = None,
        start: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.pointer = pointer(path)
        self.keyword = keyword
        self.value = value
        self.offset = offset
        self.start = start

    def __str__(self) -> str:
        where = self.pointer or "/"
        at = f" (at offset {self.offset})" if self.offset is not None else ""
        return f"{self._call_prefix()}{where}: {self.message}{at}"


class ValidationFailed(SchemaViolation):
    """The whole value failed the final validation (the pydantic model or type).

    ``errors`` lists the individual problems as ``(path, message)`` pairs.
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path = (),
        keyword: str = "",
        value: Any = None,
        offset: int | None = None,
        start: int | None = None,
        errors: Sequence[tuple[Path, str]] = (),
    ) -> None:
        super().__init__(
            message, path=path, keyword=keyword, value=value, offset=offset, start=start
        )
        self.errors = list(errors)


class PatternTimeout(StreamError):
    """A pattern check ran out of its time budget (the ``regex_timeout`` option), so whether
    the value matches is unknown: typically catastrophic backtracking, a pattern such as
    ``^(a|aa)+$`` on a string that almost matches.

    Attributes: ``path`` (tuple) and ``pointer`` (JSON Pointer) of the value (for a key checked
    against ``patternProperties``, the key's path), ``pattern`` (as written in the schema or
    the :class:`~sdk.Regex`), ``value`` (the text judged), ``timeout`` (the budget, seconds),
    ``offset`` (where in the output the check ran). Not retryable: the pattern is the caller's
    to fix (or the budget to raise); the model is not blamed, and a retry policy stops here.
    A check on a string's prefix that runs out never raises: the final check decides.
    """

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        path: Path = (),
        pattern: str = "",
        value: Any = None,
        timeout: float = 0.0,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.pointer = pointer(path)
        self.pattern = pattern
        self.value = value
        self.timeout = timeout
        self.offset = offset

    def __str__(self) -> str:
        at = f" (at offset {self.offset})" if self.offset is not None else ""
        return f"{self._call_prefix()}{self.pointer or '/'}: {self.message}{at}"


class TruncatedError(StreamError):
    """The output ended before the document did.

    ``snapshot`` is the partial value received, ``open_paths`` the paths still open (innermost
    last), ``reason`` what ended it: ``"length"`` for the token limit (also raised for a root
    number at the limit, which more output could have changed), ``"eof"`` for a source that
    ended (or a model that stopped) mid-document, or the provider's own word for a reason the
    stream has none for (Anthropic's ``"pause_turn"``, Gemini's ``"OTHER"``...), which the
    message names too.
    """

    def __init__(
        self,
        message: str,
        *,
        snapshot: Any = None,
        open_paths: Sequence[Path] = (),
        reason: str = "eof",
    ) -> None:
        super().__init__(message)
        self.snapshot = snapshot
        self.open_paths = list(open_paths)
        self.reason = reason


class RunawayOutput(StreamError):
    """The output degenerated: it could go on until the token limit without ever breaking the
    schema, so the attempt was stopped at the first sign (``docs/errors.md``), before the next
    chunk was paid for. ``path`` is where (the string, the array, or the container whose
    whitespace gap it is), ``offset`` the character (in the attempt's output) at which the
    limit was passed. :attr:`cure` names what the retry asks the server to change
    (``docs/retries.md``). The limits: :class:`~sdk.RunawayLimits` (the ``runaway`` option)."""

    def __init__(self, message: str, *, path: Path = (), offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path: Path = path
        self.offset = offset

    @property
    def pointer(self) -> str:
        """``path`` as a JSON Pointer (``""`` for the root)."""
        return pointer(self.path)

    def __str__(self) -> str:
        at = f" (at offset {self.offset})" if self.offset is not None else ""
        return f"{self._call_prefix()}{self.pointer or '/'}: {self.message}{at}"


class RunawayWhitespace(RunawayOutput):
    """A run of whitespace between two JSON tokens (not inside a string) longer than any layout
    needs at its depth: ``length`` characters (the run so far, when it passed ``bound``).
    Its cure, ``"compact_whitespace"``, asks the server for JSON without free whitespace."""

    cure = "compact_whitespace"

    def __init__(
        self, message: str, *, path: Path = (), offset: int | None = None, length: int, bound: int
    ) -> None:
        super().__init__(message, path=path, offset=offset)
        self.length = length
        self.bound = bound


class RepeatedOutput(RunawayOutput):
    """A string (while it grows) or an array whose tail repeats one ``unit`` ``count`` times:
    the text repeated (a string's) or the items repeated (an array's, a list of values);
    ``span`` is how many characters of the output the repeats cover. Its cure,
    ``"less_repetition"``, asks for a frequency penalty where the server has one."""

    cure = "less_repetition"

    def __init__(
        self,
        message: str,
        *,
        path: Path = (),
        offset: int | None = None,
        unit: str | list[Any],
        count: int,
        span: int,
    ) -> None:
        super().__init__(message, path=path, offset=offset)
        self.unit = unit
        self.count = count
        self.span = span


class RefusedError(StreamError):
    """The model refused to answer; ``refusal`` is its text."""

    retryable = False

    def __init__(self, refusal: str) -> None:
        super().__init__(f"the model refused: {refusal}")
        self.refusal = refusal


class ContentFilteredError(StreamError):
    """The provider's content filter stopped the output (``finish_reason == "content_filter"``:
    OpenAI's ``content_filter``, Gemini's ``SAFETY``, ``RECITATION``, ``PROHIBITED_CONTENT``...,
    named in the message), whatever the document."""

    retryable = False

    def __init__(
        self,
        message: str = "the provider's content filter stopped the output",
        *,
        snapshot: Any = None,
    ) -> None:
        super().__init__(message)
        self.snapshot = snapshot


class TransportError(StreamError):
    """The server or the connection failed.

    ``status`` is the HTTP status (``None`` for a connection failure), ``retryable`` whether a new
    request may help (connection failures, 408, 409, 429, 5xx: yes; other 4xx: no; see
    :mod:`sdk._retry`), ``retry_after`` the wait the server asked for in seconds
    (``retry-after-ms`` or ``Retry-After``), ``body`` what it sent (parsed JSON when it sent
    JSON, else the text), ``response`` the HTTP response when there was one (an
    ``httpx.Response``; an ``httpx2.Response`` through ``Client.from_openai`` with openai 3),
    ``request_id`` its ``x-request-id`` header (for a stream that failed midway too).
    ``retries`` holds the errors of the earlier tries of the same request that were retried
    before this one (oldest first).

    As openai-python's ``APIError``: ``body`` is the error object itself (``{"message",
    "type", "code", "param"}``), whether the server sent it as a status's body or inside the
    stream; ``code``, ``type`` and ``param`` are read from it (``None`` when it has none);
    ``request`` is the HTTP request (``httpx.Request``), when one was made; ``message`` says
    what went wrong without the URL (``request.url`` has it).

    A status error is one of the :class:`APIStatusError` classes, a connection failure an
    :class:`APIConnectionError`, whether retries were off or ran out.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = True,
        retry_after: float | None = None,
        body: Any = None,
        response: Any = None,
        request_id: str | None = None,
        request: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.body = body
        self.response = response
        self.request_id = request_id
        self.retries: tuple[TransportError, ...] = ()
        self._request: Any = request

    @property
    def request(self) -> Any:
        """The HTTP request that failed (an ``httpx.Request``), or ``None`` when none is
        known (an error a test or a backend made without one)."""
        if self._request is not None:
            return self._request
        return getattr(self.response, "request", None)

    @property
    def code(self) -> Any:
        """``body["code"]`` (``"insufficient_quota"``, ``"rate_limit_exceeded"``...; a number
        from some servers), ``None`` when the body has none."""
        return self._from_body("code")

    @property
    def param(self) -> Any:
        """``body["param"]``: the request parameter the error is about, if the server said."""
        return self._from_body("param")

    @property
    def type(self) -> Any:
        """``body["type"]`` (``"invalid_request_error"``...), ``None`` when the body has none."""
        return self._from_body("type")

    def _from_body(self, key: str) -> Any:
        return self.body.get(key) if isinstance(self.body, dict) else None


class APIStatusError(TransportError):
    """The server answered with a status that is not 2xx (the stream never began).

    ``status_code`` (the same as ``status``), ``response``, ``body``, ``request_id`` and
    ``message`` as openai-python's ``APIStatusError`` has them. Built by :func:`status_error`,
    which picks the class of the status's family."""

    status: int

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retryable: bool = False,
        retry_after: float | None = None,
        body: Any = None,
        response: Any = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(
            message,
            status=status,
            retryable=retryable,
            retry_after=retry_after,
            body=body,
            response=response,
            request_id=request_id,
        )

    @property
    def status_code(self) -> int:
        """The HTTP status."""
        return self.status


class BadRequestError(APIStatusError):
    """HTTP 400: the server refused the request (a schema it will not take, a bad parameter)."""


class AuthenticationError(APIStatusError):
    """HTTP 401: no API key, or a wrong one."""


class PermissionDeniedError(APIStatusError):
    """HTTP 403: the key may not use this model or endpoint."""


class NotFoundError(APIStatusError):
    """HTTP 404: no such model, or a wrong ``base_url``."""


class ConflictError(APIStatusError):
    """HTTP 409 (retried, as openai-python does)."""


class UnprocessableEntityError(APIStatusError):
    """HTTP 422: the server could not process the request's body."""


class RateLimitError(APIStatusError):
    """HTTP 429: rate limited or out of quota (retried, honouring ``retry_after``)."""


class InternalServerError(APIStatusError):
    """HTTP 500 or above: the server failed (retried)."""


_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error_class(status: int) -> type[APIStatusError]:
    """The class of the errors for an HTTP ``status`` (``APIStatusError`` itself for a status
    of no named family, such as 402 or 408)."""
    if status >= 500:
        return InternalServerError
    return _STATUS_CLASSES.get(status, APIStatusError)


class PartialArgumentsError(TransportError):
    """A server streamed a call's arguments as path-addressed values (Vertex AI's
    ``functionCall.partialArgs``) that make no JSON text: a path that goes back (a member
    written twice, an index skipped, a container left and entered again), a value whose type
    changed, an unknown value kind, a path too deep or not a path to one value.
    ``json_path`` is the path as the server wrote it (``None`` when the error is not about
    one); the message says which call and what was wrong. Not retryable: the server's stream
    is malformed, as a record that is not JSON is (:mod:`sdk._http._path_writer`)."""

    def __init__(self, message: str, *, json_path: str | None = None, body: Any = None) -> None:
        super().__init__(message, retryable=False, body=body)
        self.json_path = json_path


class APIConnectionError(TransportError):
    """The connection failed or broke (no status): refused, reset, a DNS failure, a stream cut
    mid-way. Retried."""


class APITimeoutError(APIConnectionError):
    """The connection timed out (connecting, or waiting for the next bytes). Retried."""


class BackendError(StreamError):
    """A backend failed in a way that is not a transport error (e.g. the local engine)."""

    retryable = False


class MissingDependencyError(BackendError, ImportError):
    """An optional extra is missing; the message says what to ``pip install``."""


class CallbackError(StreamError):
    """An ``on_field`` callback raised. ``path`` is the field, ``__cause__`` the exception."""

    retryable = False

    def __init__(self, message: str, *, path: Path = ()) -> None:
        super().__init__(message)
        self.path = path
        self.pointer = pointer(path)


class RetriesExhausted(StreamError):
    """Every attempt failed; ``errors`` holds each attempt's error, in order."""

    retryable = False

    def __init__(self, errors: Sequence[BaseException]) -> None:
        last = errors[-1] if errors else None
        super().__init__(f"all {len(errors)} attempts failed; last error: {last}")
        self.errors = list(errors)


class SchemaError(ValueError):
    """The schema cannot be used: it is not valid JSON Schema in its dialect (a keyword's value
    of the wrong type, an invalid pattern...), pydantic cannot describe the type, or it holds
    something the tracker cannot check (a ``$dynamicRef`` whose
    target depends on the evaluation path, a ``$ref`` no registry resolves, an unknown keyword
    when ``unknown="refuse"``...). Raised when the schema is compiled, never later.
    ``keyword`` names the keyword (``""`` when not one keyword's fault),
    ``pointer`` is where it sits in the schema (JSON Pointer, ``""`` for the root).
    """

    def __init__(self, message: str, *, keyword: str = "", pointer: str = "") -> None:
        super().__init__(message)
        self.keyword = keyword
        self.pointer = pointer


class StreamUsageError(RuntimeError):
    """The stream was used wrongly: iterated twice, read by two tasks at once, used outside
    its ``async with`` block, ``result()`` of a stream with several tool calls, and so on."""


class UnsupportedConstraint(StreamUsageError):
    """The backend cannot send this constraint (a :class:`~sdk.Regex` to OpenAI, a
    :class:`~sdk.StructuralTag` to a server whose flavour is not known...): raised by
    :meth:`sdk.Client.stream`, before any request. The message says what the backend takes
    and how to go on (``Client(server=...)``, or ``mode="none"``: nothing is sent and the
    client alone checks the output)."""


class AnswerInReasoning(StreamError):
    """The answer landed in the reasoning channel: the message's content is empty and the
    reasoning (``delta.reasoning_content``, Ollama's ``thinking``...) is itself the JSON
    document. A server that applies its grammar inside the thinking does this (llama.cpp
    #20345, vLLM #16182), as does a model that thinks its whole answer.

    ``reasoning`` is that text; ``server`` names the server in words, when the backend said.
    ``cure`` is the server's fix (``"no_thinking"``: thinking turned off), which the next
    attempt's request applies; where the server has none, or the attempt had already asked
    for it, the error is not retried (``retryable`` is ``False``). Pass
    ``reasoning_fallback=True`` to read the document from the reasoning instead
    (docs/reasoning.md)."""

    def __init__(
        self,
        message: str,
        *,
        reasoning: str = "",
        server: str | None = None,
        cure: str | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message)
        self.reasoning = reasoning
        self.server = server
        self.cure = cure
        self.retryable = retryable


class ConstraintIgnored(OutputSyntaxError):
    """The server returned output that the constraint it claims to apply cannot have
    produced: prose at the start of a document sent under a schema mask, or a stray ``{``
    before it. The server dropped the constraint (Ollama ignores ``format`` for some thinking
    models when ``think`` is ``false``: ollama #14645, #15260; a stray ``{``: ollama-python
    #523), it is not the model's mistake. An :class:`OutputSyntaxError`, so code that caught
    that still does.

    ``cause`` says what was seen, in words; ``server`` names the server. ``cure`` is the
    server's known fix (``"allow_thinking"`` for Ollama under ``think: false``), applied by the
    next attempt; where none is known, or the attempt had already asked for it, the error is
    not retried (``retryable`` is ``False``): the same request would fail the same way."""

    def __init__(
        self,
        message: str,
        *,
        cause: str,
        offset: int | None = None,
        server: str | None = None,
        cure: str | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message, offset=offset)
        self.cause = cause
        self.server = server
        self.cure = cure
        self.retryable = retryable
