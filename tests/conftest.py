"""Shared fixtures and markers.

Every ``@pytest.mark.anyio`` test runs on asyncio and on trio. A test that needs the ``local``
extra (the local engine's llama.cpp runtime: xllamacpp, llguidance, numpy, jinja2) carries the
``local`` marker (every test under ``tests/sdk/local/`` has it implicitly); one that
needs the ``torch`` extra (the torch runtime: torch, transformers, xgrammar, gguf) carries the
``torch`` marker (every test parametrised with ``runtime="torch"`` has it implicitly). Where an
extra is not installed, its tests are skipped with the reason, so a contributor without it (or
a Python without a torch wheel) still runs everything else.

Each test marked ``slow`` (the real model, the real server, the browser) is named as it ends,
with its time (its fixtures' setup included, so a model load shows where it happens), even
under ``-q``: the long phases of a run are never only dots.

``llama_server`` (llama.cpp's OpenAI-compatible server on SmolLM2-135M, in a child process on
127.0.0.1) starts once per session, for every test that asks for it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

LOCAL_MODULES = ("xllamacpp", "llguidance", "numpy", "jinja2")
TORCH_MODULES = ("torch", "transformers", "xgrammar", "gguf")
LOCAL_DIR = Path(__file__).parent / "sdk" / "local"


def _missing(extra: str, modules: tuple[str, ...]) -> str | None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (
        f"needs the {extra} extra ({', '.join(missing)} not installed): pip install -e '.[{extra}]'"
    )


def local_missing() -> str | None:
    """Why the local engine's (llama.cpp runtime's) tests cannot run here, or ``None``."""
    return _missing("local", LOCAL_MODULES)


def torch_missing() -> str | None:
    """Why the torch runtime's tests cannot run here, or ``None`` when they can."""
    return _missing("torch", TORCH_MODULES)


def _on_torch(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("runtime") == "torch"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    local_reason, torch_reason = local_missing(), torch_missing()
    for item in items:
        if LOCAL_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.local)
        if _on_torch(item):
            item.add_marker(pytest.mark.torch)
        if local_reason and item.get_closest_marker("local"):
            item.add_marker(pytest.mark.skip(reason=local_reason))
        elif torch_reason and item.get_closest_marker("torch"):
            item.add_marker(pytest.mark.skip(reason=torch_reason))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The async backend a test runs on (anyio's pytest plugin reads this fixture)."""
    return str(request.param)


_slow_times: dict[str, float] = {}


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "slow" not in report.keywords or report.skipped:
        return
    _slow_times[report.nodeid] = _slow_times.get(report.nodeid, 0.0) + report.duration
    if report.when != "teardown":
        return
    total = _slow_times.pop(report.nodeid)
    reporter = _config.pluginmanager.get_plugin("terminalreporter") if _config else None
    if reporter is None:
        return
    # On a line of its own: under -q the dots have no file name before them, and pytest's
    # ensure_newline() only ends a line that began with one.
    writer = getattr(reporter, "_tw", None)
    if not reporter.currentfspath and writer and getattr(writer, "width_of_current_line", 0):
        writer.line()
    reporter.write_line(f"  slow {total:7.1f} s  {report.nodeid}")


_config: pytest.Config | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config


def _llama_server_module() -> ModuleType:
    """tests/integration/llama_server.py, as the integration tests import it."""
    if "llama_server" not in sys.modules:
        path = Path(__file__).parent / "integration" / "llama_server.py"
        spec = importlib.util.spec_from_file_location("llama_server", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["llama_server"] = module
        spec.loader.exec_module(module)
    return sys.modules["llama_server"]


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The real server (tests/integration/llama_server.py), started once for the whole run:
    the integration tests and the examples share it. Its log is in the session's temporary
    folder."""
    log = Path(tmp_path_factory.mktemp("llama")) / "server.log"
    server = _llama_server_module().start(log=log)
    try:
        yield server
    finally:
        server.stop()
