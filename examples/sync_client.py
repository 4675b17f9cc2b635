"""The same stream without async: ``SyncClient`` for scripts, notebooks and WSGI apps.

Against an OpenAI-compatible server (``--base-url``, default ``$OPENAI_BASE_URL``, else OpenAI's
API with ``$OPENAI_API_KEY``)::

    python examples/sync_client.py --base-url http://127.0.0.1:8080/v1

``--temperature 0`` asks for greedy decoding (by default the server's own sampling).

Prints each field as it becomes final, then ``result:`` and the validated model as JSON.
Leaving the ``with`` block early (a ``break``, an exception, Ctrl-C) closes the generation.
"""

from __future__ import annotations

import argparse

from models import Person

from sdk import FieldEvent, SyncClient

PROMPT = "Invent a fictional person: name, age, occupation, mood and up to three hobbies."


def main(base_url: str | None, model: str | None, temperature: float | None) -> None:
    with SyncClient(base_url=base_url, model=model) as client:
        with client.stream(
            messages=[{"role": "user", "content": PROMPT}],
            schema=Person,
            max_tokens=160,
            temperature=temperature,  # None: not sent
        ) as stream:
            for event in stream:
                if isinstance(event, FieldEvent):
                    print(f"field {event.pointer or '/'} = {event.value!r}")
            person = stream.result()
    print("result:", person.model_dump_json())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the API root, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", help="the model name the server knows")
    parser.add_argument("--temperature", type=float, help="0 for greedy; default: the server's")
    args = parser.parse_args()
    main(args.base_url, args.model, args.temperature)
