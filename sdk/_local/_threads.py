"""How many CPU threads the local engine's forward passes use when the caller sets none.

torch's own default is one intra-op thread per core. On a quiet machine that is right; on a
busy one (other processes keep the cores occupied) those threads wait on each other at every
operator's barrier while the scheduler runs something else, and a 135M-parameter model that
decodes 30 tokens/s on two quiet cores fell to about 1 token/s (llama.cpp's server, one
thread, kept 47 on the same machine). So the default takes the cores nobody else is using:
the CPUs this process may run on, less the one-minute load average (rounded), at least one,
and never more than torch's own setting.
"""

from __future__ import annotations

import os

__all__ = ["default_threads", "usable_cpus"]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_threads(torch_threads: int, cpus: int | None = None, load: float | None = None) -> int:
    """The intra-op thread count for a caller that asked for none (see the module docstring).

    ``torch_threads`` is torch's current setting; ``cpus`` and ``load`` default to
    :func:`usable_cpus` and the one-minute load average (taken as 0 where the OS has none).
    The result is between 1 and ``min(torch_threads, cpus)``.
    """
    if cpus is None:
        cpus = usable_cpus()
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # Windows has no load average
            load = 0.0
    idle = cpus - round(load)
    return max(1, min(torch_threads, cpus, idle))
