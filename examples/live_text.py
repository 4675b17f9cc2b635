"""A live text field, as a UI shows it: the summary appears as the model writes it.

``deltas=True`` makes the stream also yield :class:`~sdk.TextDelta` events: the new characters
of a string value, escapes already decoded, as they arrive. A UI appends them to the widget
of that field; the field's :class:`~sdk.FieldEvent` still comes when the string is final (and
validated). Runs on the embedded local engine::

    python examples/live_text.py

Prints ``summary:`` and then the summary's text piece by piece on one line (the "widget"),
then each final field, ``streamed text matches the final value: True``, and ``result:``.
"""

from __future__ import annotations

import sys

import anyio
from models import Review

from sdk import Client, FieldEvent, TextDelta

PROMPT = (
    "Write a short review of a ceramic coffee mug: product name, rating and a summary of what "
    "you think of it."
)


async def main() -> None:
    widget: list[str] = []  # what the UI's summary box shows
    finals: dict[str, object] = {}
    async with Client.local() as client:
        async with client.stream(
            messages=[{"role": "user", "content": PROMPT}],
            schema=Review,
            deltas=True,
            max_tokens=90,
        ) as stream:
            async for event in stream:
                if isinstance(event, TextDelta) and event.path == ("summary",):
                    if not widget:
                        sys.stdout.write("summary: ")
                    widget.append(event.text)
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
                elif isinstance(event, FieldEvent) and event.path:
                    finals[event.pointer] = event.value
            review = await stream.result()
    print()
    for pointer, value in finals.items():
        print(f"final {pointer} = {value!r}")
    print("streamed text matches the final value:", "".join(widget) == review.summary)
    print("result:", review.model_dump_json())


if __name__ == "__main__":
    anyio.run(main)
