"""Shared fixtures: every ``@pytest.mark.anyio`` test runs on asyncio and on trio."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The async backend a test runs on (anyio's pytest plugin reads this fixture)."""
    return str(request.param)
