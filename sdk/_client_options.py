"""The keyword options ``Client(...)`` and ``SyncClient(...)`` take, for the type checker: every
provider's, in one ``TypedDict`` (a provider's backend refuses, with a ``TypeError`` that names
it, an option it does not take: ``sdk._providers``). Imported for type checking only, so that a
client imports no provider folder it does not use."""

from __future__ import annotations

from sdk._http.anthropic._backend import AnthropicOptions
from sdk._http.gemini._backend import GeminiOptions
from sdk._http.ollama._backend import OllamaOptions
from sdk._http.openai._backend import ServerOptions

__all__ = ["ClientOptions"]


class ClientOptions(ServerOptions, AnthropicOptions, GeminiOptions, OllamaOptions, total=False):
    """OpenAI's (``organization``, ``server``, Azure's...), Anthropic's (``platform``, Bedrock's
    and Vertex AI's, ``eager_input_streaming``), Gemini's (``vertex``, ``project``,
    ``location``...) and the transport options they share."""
