"""Abort and retry: a rule the grammar does not enforce stops the generation at once.

The schema says the name must not be a placeholder (``"not": {"enum": [...]}``, added to the
pydantic field's JSON Schema). The local engine's grammar cannot express ``not``, so the model
may write ``"John Smith"``; the tracker sees the violation the moment the name's closing quote
arrives, the generation is stopped there (no more tokens are spent on age and city), and the
next attempt starts at once with feedback telling the model what was wrong and where.

A small model copies what it sees, so two things are adapted to it here: the feedback (a
:class:`~sdk.Retry` ``feedback`` builder) says what was wrong without showing the model its
failed output again, and the source raises the temperature for retries: it is a callable that
gets each :class:`~sdk.Attempt` (its number and feedback messages) and starts a generation for
it. With a larger model the defaults do (``client.stream(..., retry=Retry())``). Runs on the
embedded local engine::

    python examples/abort_retry.py

Prints each field as it is final (with its attempt), then one line per attempt (``aborted``
with the error and how much output it read, or ``ok``), then ``result:`` and the person.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from pydantic import BaseModel, Field

from sdk import (
    Attempt,
    AttemptInfo,
    Client,
    Delta,
    FieldEvent,
    GenerationRequest,
    Message,
    Retry,
    SchemaViolation,
    stream_structured,
)

PLACEHOLDERS = ["John", "Jane", "John Smith", "Jane Smith", "John Doe", "Jane Doe"]
MESSAGES = ({"role": "user", "content": "Describe a fictional person as JSON: name, age, city."},)


class Character(BaseModel):
    name: Annotated[str, Field(max_length=30, json_schema_extra={"not": {"enum": PLACEHOLDERS}})]
    age: int = Field(ge=0, le=120)
    city: Annotated[str, Field(max_length=30)]


def feedback(info: AttemptInfo) -> tuple[Message, ...]:
    """What the next attempt is told about a failed one (the default also repeats the failed
    output as an assistant message, which a 135M-parameter model tends to copy)."""
    error = info.error
    if isinstance(error, SchemaViolation):
        text = f"The value at {error.pointer} is not allowed. Invent a different, unusual one."
    else:
        text = f"That reply failed: {error}. Try again."
    return ({"role": "user", "content": text},)


async def main() -> None:
    async with Client.local() as client:

        def attempt(attempt: Attempt) -> AsyncIterator[Delta]:
            request = GenerationRequest(
                messages=MESSAGES + attempt.feedback,  # the feedback names the violation
                schema=Character.model_json_schema(),
                schema_name="Character",
                max_tokens=60,
                # Greedy first; retries sample, seeded so the run can be repeated.
                temperature=None if attempt.number == 1 else 0.8,
                seed=attempt.number,
            )
            return client.backend.generate(request)

        async with stream_structured(
            attempt, schema=Character, retry=Retry(max_attempts=4, feedback=feedback)
        ) as stream:
            async for event in stream:
                assert isinstance(event, FieldEvent)
                print(f"attempt {event.attempt}: field {event.pointer or '/'} = {event.value!r}")
            character = await stream.result()
        for info in stream.attempts:
            if info.error is None:
                print(f"attempt {info.number}: ok ({len(info.text)} characters)")
            else:
                print(
                    f"attempt {info.number}: aborted after {len(info.text)} characters "
                    f"{info.text!r}: {type(info.error).__name__}: {info.error}"
                )
    print("result:", character.model_dump_json())


if __name__ == "__main__":
    anyio.run(main)
