"""Shared fixtures and markers.

Every ``@pytest.mark.anyio`` test runs on asyncio and on trio. A test that needs the ``local``
extra (torch, transformers, xgrammar) carries the ``local`` marker (every test under
``tests/integration/local/`` has it implicitly); where the extra is not installed, those tests
are skipped with the reason, so a contributor without it (or a Python without a torch wheel)
still runs everything else.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

LOCAL_MODULES = ("torch", "transformers", "xgrammar")
LOCAL_DIR = Path(__file__).parent / "integration" / "local"


def local_missing() -> str | None:
    """Why the local-engine tests cannot run here, or ``None`` when they can."""
    missing = [m for m in LOCAL_MODULES if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return f"needs the local extra ({', '.join(missing)} not installed): pip install -e '.[local]'"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = local_missing()
    for item in items:
        if LOCAL_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.local)
        if reason and item.get_closest_marker("local"):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The async backend a test runs on (anyio's pytest plugin reads this fixture)."""
    return str(request.param)
