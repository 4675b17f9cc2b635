"""Callbacks that start downstream work early: look each city up while the model still writes.

``on_field`` maps path patterns to callbacks. ``"/cities/*"`` fires once per city, the moment
that city's object is final, so the (here simulated) lookup for the first city runs while the
model is still writing the second. ``async`` callbacks run concurrently in the stream's task
group; the stream's result waits for them. Runs on the embedded local engine::

    python examples/callbacks.py

Prints ``lookup started`` (with whether the model was still writing) and ``lookup done``
lines per city, then ``result:`` with the trip and ``lookups:`` with what was found.
"""

from __future__ import annotations

import time

import anyio
from models import Trip

from sdk import Client, FieldEvent

PROMPT = "Plan a short trip through three cities in Europe."

# Stands in for a slow service (a geocoder, a database, an HTTP API).
GAZETTEER = {
    "paris": "48.86N 2.35E",
    "rome": "41.90N 12.50E",
    "berlin": "52.52N 13.40E",
    "london": "51.51N 0.13W",
    "madrid": "40.42N 3.70W",
    "vienna": "48.21N 16.37E",
}


async def main() -> None:
    started = time.monotonic()
    document_final = anyio.Event()
    found: dict[str, str] = {}

    async def look_up(event: FieldEvent) -> None:
        city = event.value["name"]
        writing = "yes" if not document_final.is_set() else "no"
        print(
            f"lookup started for {city!r} at +{time.monotonic() - started:.2f} s "
            f"(model still writing: {writing})"
        )
        await anyio.sleep(0.2)  # the slow service
        found[city] = GAZETTEER.get(city.lower(), "not in the gazetteer")
        print(f"lookup done for {city!r}: {found[city]}")

    def on_document(event: FieldEvent) -> None:
        document_final.set()
        print(f"document final at +{time.monotonic() - started:.2f} s")

    async with Client.local() as client:
        async with client.stream(
            messages=[{"role": "user", "content": PROMPT}],
            schema=Trip,
            on_field={"/cities/*": look_up, "": on_document},
            max_tokens=100,
        ) as stream:
            trip = await stream.result()  # reads the stream; waits for the lookups too
    print("result:", trip.model_dump_json())
    print("lookups:", found)


if __name__ == "__main__":
    anyio.run(main)
