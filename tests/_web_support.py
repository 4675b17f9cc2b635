"""Helpers for the web example's tests: the app, imported from its file, and a backend that
writes scripted answers a piece at a time."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import anyio

from sdk import Delta, GenerationRequest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "web" / "app.py"
FIELDS = ["name", "age", "occupation", "mood", "hobbies"]

BAD = '{"name": "Ada Lovelace", "age": 36, "occupation": "mathematician", "mood": "sleepy"}'
GOOD = (
    '{"name": "Ada Lovelace", "age": 36, "occupation": "mathematician", "mood": "curious", '
    '"hobbies": ["chess", "poetry"]}'
)


def import_app() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_web_example_app", APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def pieces(doc: str) -> list[str]:
    """``doc`` in pieces of about a token: 3 characters each."""
    return [doc[i : i + 3] for i in range(0, len(doc), 3)]


class PacedBackend:
    """A backend that writes ``scripts[n - 1]`` on attempt n, one piece every ``pace`` seconds,
    and records how many pieces each attempt handed out before it was closed."""

    def __init__(self, *scripts: str, pace: float) -> None:
        self.scripts = [pieces(s) for s in scripts]
        self.pace = pace
        self.sent: list[int] = []

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        self.sent.append(0)
        for piece in self.scripts[len(self.sent) - 1]:
            await anyio.sleep(self.pace)
            self.sent[-1] += 1
            yield Delta(text=piece)
        yield Delta(finish_reason="stop")

    async def aclose(self) -> None:
        pass
