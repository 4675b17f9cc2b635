"""An OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, OpenAI): no torch needed.

Streams a structured answer from the server at ``--base-url`` (default ``$OPENAI_BASE_URL``, else
OpenAI's API with ``$OPENAI_API_KEY``), printing each field the moment it is final, each attempt
that failed and whether it is retried, then ``result:`` and the validated model as JSON::

    python examples/server.py --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
    OPENAI_API_KEY=sk-... python examples/server.py --model gpt-4o-mini

``--temperature 0`` asks for greedy decoding (by default the server's own sampling).

The schema goes out as a strict ``response_format`` (what OpenAI accepts; vLLM, SGLang and
llama.cpp turn it into a grammar), and the client checks every field against it as it streams.
"""

from __future__ import annotations

import argparse

import anyio
from models import Person

from sdk import AttemptFailed, Client, FieldEvent, Retry, StreamEnded

PROMPT = "Invent a fictional person: name, age, occupation, mood and up to three hobbies."


async def main(base_url: str | None, model: str | None, temperature: float | None) -> None:
    async with Client(base_url=base_url, model=model) as client:
        async with client.stream(
            messages=[{"role": "user", "content": PROMPT}],
            schema=Person,
            retry=Retry(max_attempts=3),  # output errors too (transport ones are by default)
            max_tokens=160,
            temperature=temperature,  # None: not sent
            progress=True,  # attempts and usage as events, beside the fields
        ) as stream:
            async for event in stream:
                if isinstance(event, FieldEvent):
                    print(f"field {event.pointer or '/'} = {event.value!r}")
                elif isinstance(event, AttemptFailed):
                    then = "retrying" if event.retrying else "giving up"
                    print(f"attempt {event.attempt} failed ({event.error}); {then}")
                elif isinstance(event, StreamEnded):
                    print(f"done: {event.attempts} attempt(s), {event.usage.total_tokens} tokens")
            person = await stream.result()  # a Person, for the type checker too
    print("result:", person.model_dump_json())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the API root, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", help="the model name the server knows")
    parser.add_argument("--temperature", type=float, help="0 for greedy; default: the server's")
    args = parser.parse_args()
    anyio.run(main, args.base_url, args.model, args.temperature)
