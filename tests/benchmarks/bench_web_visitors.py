"""Benchmark: the web example serving one visitor, then two at once (a script, not a test).

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_web_visitors.py [--repeat 5]
        [--threads 1] [--max-tokens 160]

Serves ``examples/web/app.py`` as it is (Starlette under uvicorn on 127.0.0.1, the real client
on ``Client.local()``: the packaged model, its default slots) and reads ``GET /stream`` the way
the page does (server-sent events, to the ``done`` or ``failed`` event), greedy so that every
run writes the same text. Each repeat, interleaved: each of two visitors (different prompts)
alone, one after the other, then the two at once. Prints the medians of a visitor's time from
its request to its last event: the slower of the two alone, the slower of the two at once, and
their ratio, which is what "two visitors at once at nearly the speed of one" means.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
import urllib.parse
import urllib.request

from sdk import Client
from tests._web_support import import_app, served

PROMPTS = (
    "Invent a person who works in a bakery.",
    "Invent a person who repairs bicycles.",
)


def visit(base: str, prompt: str) -> tuple[float, int]:
    """One visitor's stream: seconds to its last event, and its bytes of events (the events
    of a run are the same every time: greedy)."""
    started = time.perf_counter()
    url = f"{base}/stream?{urllib.parse.urlencode({'prompt': prompt})}"
    size = 0
    with urllib.request.urlopen(url, timeout=600) as response:
        for raw in response:
            size += len(raw)
            if raw.startswith(b"event: done") or raw.startswith(b"event: failed"):
                break
    return time.perf_counter() - started, size


def together(base: str, prompts: tuple[str, ...]) -> list[float]:
    times = [0.0] * len(prompts)

    def one(i: int) -> None:
        times[i] = visit(base, prompts[i])[0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=160)
    args = parser.parse_args()
    app_module = import_app()
    client = Client.local(threads=args.threads)  # greedy: the app sets no temperature
    app = app_module.create_app(client, max_tokens=args.max_tokens)
    alone: list[float] = []
    pair: list[float] = []
    with served(app) as base:
        visit(base, PROMPTS[0])  # load the model, compile the schema
        for _ in range(args.repeat):
            alone.append(max(visit(base, prompt)[0] for prompt in PROMPTS))
            pair.append(max(together(base, PROMPTS)))
    one, two = statistics.median(alone), statistics.median(pair)
    print(
        f"threads {args.threads}, max_tokens {args.max_tokens}, repeat {args.repeat}, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"alone, the slower one:       {one:6.2f} s   runs {' '.join(f'{t:.2f}' for t in alone)}")
    print(f"two at once, the slower one: {two:6.2f} s   runs {' '.join(f'{t:.2f}' for t in pair)}")
    print(f"two at once / alone:         {two / one:6.2f}x")


if __name__ == "__main__":
    main()
