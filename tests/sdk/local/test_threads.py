"""The local engine's default thread count: the cores a busy machine leaves idle."""

from __future__ import annotations

import os

import pytest

from sdk._local._threads import default_threads, usable_cpus


@pytest.mark.parametrize(
    ("torch_threads", "cpus", "load", "expected"),
    [
        (2, 2, 0.0, 2),  # a quiet machine: torch's default stands
        (2, 2, 0.6, 1),  # one core busy
        (2, 2, 13.4, 1),  # heavily loaded: one thread, never zero
        (8, 16, 3.2, 8),  # never more than torch's setting
        (16, 16, 3.5, 12),  # rounding: 3.5 -> 4 busy cores
        (4, 2, 0.0, 2),  # never more than the CPUs this process may use
        (1, 8, 0.0, 1),  # a caller who lowered torch's setting keeps it
    ],
)
def test_default_threads_takes_the_idle_cores(
    torch_threads: int, cpus: int, load: float, expected: int
) -> None:
    assert default_threads(torch_threads, cpus, load) == expected


def test_defaults_read_this_machine() -> None:
    assert 1 <= usable_cpus() <= (os.cpu_count() or 1)
    assert 1 <= default_threads(64) <= usable_cpus()
