"""Abort-and-retry against validate-at-the-end-then-retry, on a real server.

    .venv/bin/python tests/benchmarks/bench_abort.py [--attempts 5] [--threads 2]

Starts llama.cpp's server (xllamacpp, SmolLM2-135M; tests/integration/llama_server.py) and
sends requests whose output breaks the client's schema early: the server's grammar accepts
"Yes"/"No" in any case, the client wants lower case, and the answer comes first, before a long
explanation. Sampling at temperature 1; attempt k of prompt p uses seed 100 p + k in both
methods, so the first attempt is the same output for both and a retry can come out differently
(with one seed for every attempt the tiny model repeats its first answer). For each prompt, two
ways to a valid result:

- **end**: stream the whole output, validate it at the end (jsonschema), retry with the error
  fed back — the usual loop;
- **fieldstream**: ``Client.stream`` with ``Retry``: the violation is seen at the answer's
  first letter, the response is closed (the server stops decoding) and the retry starts at once.

Tokens are the server's own count (``llamacpp:tokens_predicted_total`` from ``/metrics``), so
an aborted attempt counts what the server really decoded, the tokens after the abort included.
Medians over the prompts; the ratio is end / fieldstream (higher is better for fieldstream).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import jsonschema
from pydantic import BaseModel, Field

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from sdk._backend import Delta, GenerationRequest  # noqa: E402
from sdk._client import Client  # noqa: E402
from sdk._errors import StreamError, TransportError  # noqa: E402
from sdk._http.openai._backend import OpenAIBackend  # noqa: E402
from sdk._retry import Retry  # noqa: E402
from tests.integration.llama_server import start  # noqa: E402


class Verdict(BaseModel):
    answer: Literal["yes", "no"]
    explanation: str = Field(max_length=600)


STRICT = Verdict.model_json_schema()
LOOSE = {
    "type": "json_schema",
    "json_schema": {
        "name": "Verdict",
        "schema": {
            "type": "object",
            "properties": {
                "answer": {"enum": ["Yes", "No", "YES", "NO", "yes", "no"]},
                "explanation": {"type": "string", "maxLength": 600},
            },
            "required": ["answer", "explanation"],
        },
    },
}
PROMPTS = [
    "Answer Yes or No, then explain in detail: is gold a metal?",
    "Answer Yes or No, then explain in detail: is water wet?",
    "Answer Yes or No, then explain in detail: is the sky blue?",
    "Answer Yes or No, then explain in detail: can penguins fly?",
    "Answer Yes or No, then explain in detail: is the Earth flat?",
    "Answer Yes or No, then explain in detail: do plants need light?",
    "Answer Yes or No, then explain in detail: is ice hot?",
    "Answer Yes or No, then explain in detail: are cats mammals?",
]
SYSTEM = {"role": "system", "content": "Reply in JSON."}
MAX_TOKENS = 200
TEMPERATURE = 1.0


@dataclass
class Run:
    seconds: float
    tokens: float
    attempts: int
    valid: bool
    first: str = ""
    """The first attempt's output (what the server sent before the end or the abort)."""


async def predicted(http: httpx.AsyncClient, root: str) -> float:
    with anyio.fail_after(60):  # the slot must be free: a cancelled task fully accounted
        while True:  # poll the server's own state over HTTP
            slots = (await http.get(f"{root}/slots")).json()
            if not any(slot["is_processing"] for slot in slots):
                break
            await anyio.sleep(0.02)
    text = (await http.get(f"{root}/metrics")).text
    match = re.search(r"^llamacpp:tokens_predicted_total ([0-9.e+]+)$", text, re.M)
    assert match is not None
    return float(match.group(1))


class SeedPerAttempt:
    """A backend wrapper giving attempt k the seed ``base + k`` (attempt k's request carries
    2 (k - 1) feedback messages after the ``first`` ones)."""

    def __init__(self, backend: OpenAIBackend, base: int, first: int) -> None:
        self.backend, self.base, self.first = backend, base, first

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        number = 1 + (len(request.messages) - self.first) // 2
        return self.backend.generate(dataclasses.replace(request, seed=self.base + number))

    async def aclose(self) -> None:
        await self.backend.aclose()


async def end_then_retry(backend: OpenAIBackend, prompt: str, base: int, attempts: int) -> Run:
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": prompt}]
    start_time = time.perf_counter()
    for number in range(1, attempts + 1):
        request = GenerationRequest(
            messages=tuple(messages),
            schema={},
            mode="none",
            max_tokens=MAX_TOKENS,
            temperature=TEMPERATURE,
            seed=base + number,
            extra={"response_format": LOOSE},
        )
        text = await _complete(backend, request)
        if number == 1:
            first = text
        try:
            jsonschema.validate(json.loads(text), STRICT)
        except (ValueError, jsonschema.ValidationError) as exc:
            where, problem = "/", str(exc)
            if isinstance(exc, jsonschema.ValidationError):
                where, problem = "/" + "/".join(map(str, exc.absolute_path)), exc.message
            messages += [
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": "Your previous reply does not match the required "
                    f"JSON schema. At {where}: {problem}. Reply again with the whole JSON "
                    "document, corrected, and nothing else.",
                },
            ]
            continue
        return Run(time.perf_counter() - start_time, 0, number, True, first)
    return Run(time.perf_counter() - start_time, 0, attempts, False, first)


async def _complete(backend: OpenAIBackend, request: GenerationRequest) -> str:
    """The whole output; a dropped keep-alive connection is tried again (not an attempt)."""
    for _ in range(3):
        try:
            return "".join([d.text async for d in backend.generate(request)])
        except TransportError:
            continue
    raise RuntimeError("the server keeps failing")


async def abort_and_retry(backend: OpenAIBackend, prompt: str, base: int, attempts: int) -> Run:
    client = Client.from_backend(SeedPerAttempt(backend, base, first=2))
    start_time = time.perf_counter()
    valid, first = True, ""
    try:
        async with client.stream(
            messages=[SYSTEM, {"role": "user", "content": prompt}],
            schema=Verdict,
            retry=Retry(max_attempts=attempts),
            max_tokens=MAX_TOKENS,
            temperature=TEMPERATURE,
            extra_body={"response_format": LOOSE},
        ) as s:
            await s.result()
    except StreamError:
        valid = False
    if s.attempts:
        first = s.attempts[0].text
    return Run(time.perf_counter() - start_time, 0, len(s.attempts), valid, first)


async def bench(attempts: int, threads: int) -> None:
    server = start(threads=threads)
    rows: list[tuple[str, Run, Run]] = []
    try:
        # /metrics and /slots on connections of their own, not kept alive.
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=120, limits=limits) as http:
            backend = OpenAIBackend(base_url=server.base_url, timeout=120)
            for number, prompt in enumerate(PROMPTS, start=1):
                base = 100 * number
                t0 = await predicted(http, server.root)
                end = await end_then_retry(backend, prompt, base, attempts)
                t1 = await predicted(http, server.root)
                fs = await abort_and_retry(backend, prompt, base, attempts)
                t2 = await predicted(http, server.root)
                end.tokens, fs.tokens = t1 - t0, t2 - t1
                rows.append((prompt.rsplit(": ", 1)[-1], end, fs))
                print(
                    f"  {rows[-1][0]:<26} end {end.seconds:6.2f}s {end.tokens:5.0f} tok "
                    f"{end.attempts} att{'' if end.valid else ' (no valid result)'} | "
                    f"fieldstream {fs.seconds:6.2f}s {fs.tokens:5.0f} tok {fs.attempts} att"
                    f"{'' if fs.valid else ' (no valid result)'}",
                    flush=True,
                )
    finally:
        server.stop()
    report(rows, attempts)


def report(rows: list[tuple[str, Run, Run]], attempts: int) -> None:
    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    print()
    print(
        f"SmolLM2-135M on llama.cpp (xllamacpp), {len(rows)} prompts, temperature "
        f"{TEMPERATURE}, max_tokens {MAX_TOKENS}, up to {attempts} attempts"
    )
    print(f"{'':<32}{'validate at end':>18}{'fieldstream':>14}{'ratio':>8}")
    for label, pick in (
        ("wall time to result, median (s)", lambda r: r.seconds),
        ("tokens generated, median", lambda r: r.tokens),
        ("attempts, median", lambda r: float(r.attempts)),
    ):
        e = med([pick(end) for _, end, _ in rows])
        f = med([pick(fs) for _, _, fs in rows])
        print(f"{label:<32}{e:>18.2f}{f:>14.2f}{e / f if f else float('nan'):>8.2f}")
    same_first = sum(
        fs.first != "" and end.first.startswith(fs.first.rstrip()) for _, end, fs in rows
    )
    print(
        f"first attempt identical in both methods (fieldstream's cut short): "
        f"{same_first}/{len(rows)}"
    )
    both = [(end, fs) for _, end, fs in rows if end.attempts > 1 or fs.attempts > 1]
    if both:
        e = med([end.seconds for end, _ in both])
        f = med([fs.seconds for _, fs in both])
        et = med([end.tokens for end, _ in both])
        ft = med([fs.tokens for _, fs in both])
        label = f"violating prompts ({len(both)}): time"
        print(f"{label:<32}{e:>18.2f}{f:>14.2f}{e / f:>8.2f}")
        print(f"{'violating prompts: tokens':<32}{et:>18.2f}{ft:>14.2f}{et / ft:>8.2f}")
    valid_end = sum(end.valid for _, end, _ in rows)
    valid_fs = sum(fs.valid for _, _, fs in rows)
    print(f"{'valid results':<32}{valid_end:>18}{valid_fs:>14}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    anyio.run(bench, args.attempts, args.threads)


if __name__ == "__main__":
    main()
