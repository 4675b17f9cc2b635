"""The defaults that several entry points share, each written once (as openai-python's
``_constants.py`` and httpx's ``_config.py`` hold theirs): ``Client``, ``SyncClient``, their
``from_backend``, the backends, :class:`~sdk.Retry`, :class:`~sdk._options.StreamConfig`,
``batch`` and the command line read them from here, so changing one changes it everywhere.

Plain values only (no httpx, no anyio): the sans-I/O core may read them too. The HTTP backend
builds its ``httpx.Timeout`` / ``httpx.Limits`` from the numbers here.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_BATCH_CONCURRENCY",
    "DEFAULT_CALLBACK_CONCURRENCY",
    "DEFAULT_CLI_CONCURRENCY",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_JITTER",
    "DEFAULT_KEEPALIVE_EXPIRY",
    "DEFAULT_MASK_COMPILE_BUDGET",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_DELAY",
    "DEFAULT_MAX_EVENT_SIZE",
    "DEFAULT_MAX_KEEPALIVE_CONNECTIONS",
    "DEFAULT_MAX_PATTERN_SIZE",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RETRY_AFTER",
    "DEFAULT_MULTIPLIER",
    "DEFAULT_REGEX_TIMEOUT",
    "DEFAULT_SLOTS",
    "DEFAULT_TIMEOUT",
    "WRAPPED_MAX_RETRIES",
]

DEFAULT_MAX_RETRIES: Final = 2
"""Transport failures retried in a row per attempt by a client that sends its own requests
(``Client(...)``, ``Client.from_backend``, the ``SyncClient`` twins, the CLI's ``--retries``)."""

WRAPPED_MAX_RETRIES: Final = 0
"""The same, for a client over something that retries on its own (``from_openai``: the
``openai`` client's ``max_retries`` does; the local engine has no transport), so the two
layers do not multiply."""

DEFAULT_TIMEOUT: Final = 60.0
"""Seconds for any one read (the gap between two chunks), write or pool wait."""

DEFAULT_CONNECT_TIMEOUT: Final = 10.0
"""Seconds to connect."""

# Up to 1,000 streams at once (httpx's default of 100 would make the 101st concurrent stream
# wait for a free connection, and fail after the pool timeout); at most 20 idle connections kept,
# httpx's default: under httpx 0.28 the pool's bookkeeping grows with the square of the idle
# connections (see the client benchmark in the README). Idle connections are dropped after 2 s,
# before the usual server keep-alive timeout (5 s for llama.cpp and uvicorn): reusing a
# connection the server is closing fails the next request with "Server disconnected without
# sending a response".
DEFAULT_MAX_CONNECTIONS: Final = 1000
"""Connections open at once in the pool of an HTTP backend's own httpx client."""

DEFAULT_MAX_KEEPALIVE_CONNECTIONS: Final = 20
"""Idle connections kept in that pool."""

DEFAULT_KEEPALIVE_EXPIRY: Final = 2.0
"""Seconds an idle connection is kept."""

DEFAULT_MAX_ATTEMPTS: Final = 3
"""A :class:`~sdk.Retry`'s answers in all, the first included."""

DEFAULT_BACKOFF: Final = 0.5
"""Seconds before the first retry of a transport failure."""

DEFAULT_MULTIPLIER: Final = 2.0
"""Growth of that wait per retry in a row."""

DEFAULT_MAX_DELAY: Final = 30.0
"""The longest wait between two retries, in seconds."""

DEFAULT_MAX_RETRY_AFTER: Final = 120.0
"""The longest wait a server may ask for (``Retry-After`` / ``retry-after-ms``) and be
waited for: openai-python's ``MAX_RETRY_AFTER_DELAY`` (two minutes); a longer one is not
retried."""

DEFAULT_JITTER: Final = 0.5
"""The random fraction of each wait."""

DEFAULT_CALLBACK_CONCURRENCY: Final = 8
"""Async ``on_field`` callbacks running at once (``max_concurrency``)."""

DEFAULT_BATCH_CONCURRENCY: Final = 8
"""Requests running at once in ``Client.batch`` / ``SyncClient.batch``."""

DEFAULT_CLI_CONCURRENCY: Final = 4
"""Requests running at once in a batch job of the command line (``--concurrency``)."""

DEFAULT_MAX_PATTERN_SIZE: Final = 100_000
"""The largest pattern a schema or a ``Regex`` may hold (``compile_schema(max_pattern_size=)``),
as :func:`sdk._regex._ecma.pattern_size` measures it: what the ``regex`` package writes out
when it compiles, in well under a second at this size (``a{100000}`` 0.04 s, ``(a|b){100000}``
0.6 s, measured), far above any real schema's (``[a-z]{1,65535}`` is 2)."""

DEFAULT_REGEX_TIMEOUT: Final = 0.1
"""Seconds one pattern check may take (the ``regex_timeout`` option of every entry point that
starts a stream, and of the trackers). An ordinary pattern on a string of a few thousand
characters takes microseconds; only catastrophic backtracking comes near it, and a stream
blocks its event loop at most this long per check."""

DEFAULT_MAX_EVENT_SIZE: Final = 16 * 1024 * 1024
"""Bytes a pending line of a streamed response, or one event's data, may reach (16 MiB): the
HTTP backends' framing (server-sent events, JSON lines) and their read loop."""

DEFAULT_MASK_COMPILE_BUDGET: Final = 0.25
"""Seconds the local engine waits for a JSON Schema's mask plan at the request's check, and
again for its compile (``Client.local(mask_compile_budget=)``, ``LocalBackend(
mask_compile_budget=)``; None waits as long as it takes): past it, the generation decodes under
the widened schema's mask (its patterns dropped, else the root's type alone; the tracker checks
the schema itself) and the exact one is cached when its compile ends (``sdk._local._mask_budget``).
Long enough that an ordinary schema's mask (a few milliseconds, tens on a loaded machine) is
always the exact one, so what a greedy or seeded request writes does not depend on the
machine's load; short enough that no first mask waits past half a second for the two steps
(issue 42: none over 1 s). The first request of a schema whose plan or compile takes longer
(the largest of Kubernetes' and SchemaStore's, a pathological pattern) runs widened;
docs/local-engine.md says which of the corpus did, and what a smaller budget buys."""

DEFAULT_SLOTS: Final = 4
"""Generations one loaded local model decodes together (``Client.local(slots=)``,
``LocalBackend(slots=)``; the rest wait in its queue), and so what ``client.batch`` runs at
once on the local engine: four sequences of SmolLM2-135M's 4096 tokens hold about 377 MB of
KV cache."""
