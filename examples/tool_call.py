"""Tool-call arguments, streamed: act on each argument as soon as it is final.

With ``mode="tool"`` the schema is sent as a function the model must call; the call's
arguments are the document (``stream.results()`` has one value per call when a server makes
several in parallel). By default this runs on the embedded local engine, which emulates one
forced call; give an OpenAI-compatible server with tool calling to use real tool calls (vLLM,
llama.cpp's ``llama-server --jinja``, Ollama, OpenAI)::

    python examples/tool_call.py
    python examples/tool_call.py --base-url http://127.0.0.1:8080/v1 [--model NAME]

(``--api-key`` or ``$OPENAI_API_KEY`` for a server that needs one.) Prints one ``argument``
line per final argument, then ``call:`` with the tool's name and the validated arguments.
"""

from __future__ import annotations

import argparse
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, Field

from sdk import Client, FieldEvent


class GetWeather(BaseModel):
    """Get the weather forecast for a city."""

    city: Annotated[str, Field(min_length=1, max_length=30)]
    unit: Literal["celsius", "fahrenheit"]
    days: int = Field(ge=1, le=7)


PROMPT = "What will the weather be like in Paris for the next three days, in celsius?"


async def main(args: argparse.Namespace) -> None:
    if args.base_url:
        client = Client(base_url=args.base_url, api_key=args.api_key, model=args.model)
    else:
        client = Client.local()
    async with client:
        async with client.stream(
            messages=[{"role": "user", "content": PROMPT}],
            schema=GetWeather,
            mode="tool",
            max_tokens=60,
        ) as stream:
            async for event in stream:
                if isinstance(event, FieldEvent) and event.path:  # the root: printed below
                    print(f"argument {event.pointer} = {event.value!r}")
            calls = await stream.results()
    for call in calls:
        print(f"call: {stream.schema_name}({call.model_dump_json()})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server (default: local engine)")
    parser.add_argument("--model", help="the server's model name")
    parser.add_argument("--api-key", help="the server's API key")
    anyio.run(main, parser.parse_args())
