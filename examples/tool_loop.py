"""A tool loop of several turns: the model calls tools, the program runs them and sends their
results back, until the model answers. No torch needed::

    python examples/tool_loop.py --base-url http://127.0.0.1:8080/v1 --server llamacpp
    OPENAI_API_KEY=sk-... python examples/tool_loop.py --model gpt-4o-mini --server openai

Each turn appends ``stream.assistant_message()`` (the reply with its tool calls and their ids,
as Chat Completions takes it back) and one ``{"role": "tool", "tool_call_id", "content"}`` per
call. Small models call a tool only when made to, so the turns force theirs with
``tool_choice`` (one named tool each; llama.cpp's server, which forces no call itself, is asked
for that call's arguments as its answer, read back as the call); the last turn asks for the
answer as a ``Forecast``.
Prints ``turn N: tool(arguments) -> result`` per call, then ``answer:`` and the JSON.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio
from pydantic import BaseModel, Field

from sdk import Client, Tool


class GetWeather(BaseModel):
    """The current weather in a city, in degrees Celsius."""

    city: str = Field(max_length=40)


class ToFahrenheit(BaseModel):
    """Convert degrees Celsius to Fahrenheit."""

    celsius: float


# Strings are bounded, and max_tokens leaves room for the longest (a token may be one
# character): a small model, sampling, can loop inside an unbounded string until the limit.
class Forecast(BaseModel):
    city: str = Field(max_length=40)
    fahrenheit: float
    summary: str = Field(max_length=60)


def get_weather(arguments: GetWeather) -> dict[str, Any]:
    return {"city": arguments.city, "celsius": 21.0, "sky": "clear"}


def to_fahrenheit(arguments: ToFahrenheit) -> dict[str, Any]:
    return {"fahrenheit": round(arguments.celsius * 9 / 5 + 32, 1)}


RUN = {"get_weather": get_weather, "to_fahrenheit": to_fahrenheit}
TOOLS = [Tool("get_weather", GetWeather), Tool("to_fahrenheit", ToFahrenheit)]
# The tool each turn must call (small models call none unless made to).
PLAN = ["get_weather", "to_fahrenheit"]


async def main(base_url: str | None, model: str | None, server: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer with the tools' results."},
        {"role": "user", "content": "What is the weather in Paris, in Fahrenheit?"},
    ]
    async with Client(base_url=base_url, model=model, server=server) as client:
        for turn, name in enumerate(PLAN, 1):
            async with client.stream(
                messages=messages,
                tools=TOOLS,
                tool_choice={"type": "function", "function": {"name": name}},
                max_tokens=60,
            ) as stream:
                calls = await stream.results()  # the validated arguments, one per call
            message = stream.assistant_message()  # with each call's id
            messages.append(message)
            for call, arguments in zip(message["tool_calls"], calls, strict=True):
                result = RUN[call["function"]["name"]](arguments)
                shown = json.dumps(arguments.model_dump())  # the validated arguments
                print(f"turn {turn}: {call['function']['name']}({shown}) -> {json.dumps(result)}")
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                )
        async with client.stream(messages=messages, schema=Forecast, max_tokens=160) as stream:
            forecast = await stream.result()
    print("answer:", forecast.model_dump_json())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the API root, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", help="the model name the server knows")
    parser.add_argument("--server", choices=["openai", "vllm", "llamacpp"], help="which server")
    args = parser.parse_args()
    anyio.run(main, args.base_url, args.model, args.server)
