"""The OpenAI provider: OpenAI's Chat Completions and Responses APIs, and every server that
speaks them (vLLM, SGLang, llama.cpp, Ollama's ``/v1``), over the shared HTTP layer.

One provider is one folder; this one holds, per wire protocol:

- the request builders, sans-I/O: ``_chat_request`` (``POST /chat/completions``) and
  ``_responses_request`` (``POST /responses``);
- the stream decoders, sans-I/O: ``_chat_chunks`` (chunks -> deltas, tool call ids) and
  ``_responses_events`` (Responses API events -> deltas);
- the error mapping of what the server sends inside the stream: ``_errors``;
- the schema rewrite OpenAI's strict mode needs: ``_strict``;
- what each OpenAI-compatible server reads for constraints and several tools: ``_flavours``;
- the backends: ``_backend`` (over httpx, through :class:`~sdk._http._transport.HttpTransport`)
  and ``_sdk`` (over the caller's ``openai.AsyncOpenAI`` client).

What every provider shares (sending, framing, the read loop, status errors, unwrapping) is one
level up, in :mod:`sdk._http`.
"""

from __future__ import annotations

from sdk._http.openai._backend import OpenAIBackend, ResponsesBackend, ServerOptions
from sdk._http.openai._chat_request import check_single_choice
from sdk._http.openai._flavours import Api, Server
from sdk._http.openai._vendor_client import OpenAISDKBackend, ResponsesSDKBackend

__all__ = [
    "Api",
    "OpenAIBackend",
    "OpenAISDKBackend",
    "ResponsesBackend",
    "ResponsesSDKBackend",
    "Server",
    "ServerOptions",
    "check_single_choice",
]
