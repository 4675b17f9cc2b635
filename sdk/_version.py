"""The installed version of fieldstream, read from the distribution's metadata.

``pyproject.toml`` is the one place the version is written; an installed (or editable)
distribution carries it in its metadata. A source tree that was never installed has no
metadata, and then the version is read from ``pyproject.toml`` beside the package, or is
``"0+unknown"`` when that cannot be read either.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
from pathlib import Path

__all__ = ["DISTRIBUTION", "__version__", "user_agent", "version"]

DISTRIBUTION = "fieldstream"


def version() -> str:
    """The version string, e.g. ``"0.1.0"`` (never raises)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return "0+unknown"
    # A regex, not tomllib: only the [project] table's own `version = "..."` line matters,
    # and this must not fail on a file that is not ours.
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = project and re.search(r'^version\s*=\s*"([^"]+)"', project.group(1), re.M)
    return found.group(1) if found else "0+unknown"


__version__ = version()


def user_agent() -> str:
    """The ``User-Agent`` the HTTP backend sends, e.g. ``"fieldstream/0.1.0 python/3.11.7"``
    (the package's version and the interpreter's, as openai-python sends its own); a
    ``User-Agent`` in ``default_headers`` / ``headers`` replaces it."""
    return f"{DISTRIBUTION}/{__version__} python/{platform.python_version()}"
