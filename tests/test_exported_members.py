"""Each package's public API is exactly its ``__all__``: every name there exists and is
documented, and nothing public lives in the package namespace without being listed."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

import partial
import sdk


@pytest.mark.parametrize("package", [partial, sdk], ids=lambda m: m.__name__)
def test_all_is_the_public_namespace(package: types.ModuleType) -> None:
    exported = set(package.__all__)
    for name in exported:  # lazy names (the async shell) appear once touched
        getattr(package, name)
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    public.discard("annotations")  # from __future__ import annotations
    assert public == exported - {"__version__"}
    assert len(package.__all__) == len(exported), "a name is listed twice"


@pytest.mark.parametrize("package", [partial, sdk], ids=lambda m: m.__name__)
def test_every_exported_class_and_function_is_documented(package: types.ModuleType) -> None:
    for name in package.__all__:
        value = getattr(package, name)
        if isinstance(value, type) or callable(value):
            assert value.__doc__, f"{package.__name__}.{name} has no docstring"


def test_core_imports_without_the_local_extra() -> None:
    # sdk must not import torch, transformers or xgrammar at import time.
    code = (
        "import sys, sdk, partial; "
        "heavy = {'torch', 'transformers', 'xgrammar'} & set(sys.modules); "
        "print(sorted(heavy)); sys.exit(1 if heavy else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_sans_io_core_imports_alone() -> None:
    # The tracker and the events need no event loop, no HTTP client and no model.
    code = (
        "import sys; from sdk import FieldTracker, FieldEvent, SchemaViolation; "
        "import partial; "
        "loaded = {'anyio', 'httpx', 'httpx_sse', 'torch', 'transformers', 'xgrammar'} "
        "& set(sys.modules); print(sorted(loaded)); sys.exit(1 if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        sdk.Nope  # noqa: B018
