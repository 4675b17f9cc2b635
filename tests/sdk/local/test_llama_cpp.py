"""The llama.cpp runtime: its forward pass, its KV-cache reuse, its load checks and the fallback,
and how a runtime is chosen."""

from __future__ import annotations

import ctypes
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sdk._errors import BackendError
from sdk._local import _llama_cpp, _model
from sdk._local._llama_cpp import MIN_PIECE, LlamaCppForward, LoadCheckFailed, load_llama_cpp
from sdk._local._model import choose_runtime, default_gguf_path, load_model

np = pytest.importorskip("numpy")

PROMPT = [
    {"role": "system", "content": "You answer in JSON."},
    {"role": "user", "content": "Describe a cat called Mara, aged 3."},
]


@pytest.fixture(scope="module")
def gguf() -> Path:
    return default_gguf_path()


@pytest.fixture(scope="module")
def forward(gguf: Path) -> LlamaCppForward:
    loaded = load_model(runtime="llama.cpp", threads=1)
    assert isinstance(loaded.forward, LlamaCppForward)
    return loaded.forward


@pytest.fixture(scope="module")
def prompt(forward: LlamaCppForward) -> list[int]:
    tokenizer = forward.tokenizer
    text = tokenizer.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True)
    ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids


def greedy(forward: LlamaCppForward, prompt: list[int], n: int) -> list[int]:
    sequence = forward.sequence()
    rows = sequence.decode(prompt, 1)
    out: list[int] = []
    for _ in range(n):
        out.append(int(rows[-1].argmax()))
        rows = sequence.decode(out[-1:], 1)
    return out


@pytest.mark.slow
def test_a_k_token_pass_gives_the_logits_of_k_one_token_passes(
    forward: LlamaCppForward, prompt: list[int]
) -> None:
    tokens = greedy(forward, prompt, 6)
    one = forward.sequence()
    one.decode(prompt, 1)
    singles = [one.decode([t], 1).copy()[0] for t in tokens]
    many = forward.sequence()
    many.decode(prompt, 1)
    rows = many.decode(tokens, len(tokens)).copy()
    assert rows.shape == (len(tokens), forward.vocab_size)
    for i, row in enumerate(singles):
        assert float(np.abs(rows[i] - row).max()) < 1e-4, i


def test_the_logits_are_a_numpy_view_of_llama_cpp_s_buffer(
    forward: LlamaCppForward, prompt: list[int]
) -> None:
    """No copy: the array's memory is llama.cpp's, so a mask written into it is what the
    sampler reads, and a row costs nothing to hand over."""
    rows = forward.sequence().decode(prompt, 1)
    assert rows.dtype == np.float32 and rows.shape == (1, forward.vocab_size)
    buffer = forward._lib.llama_get_logits(forward._ctx)
    assert rows.ctypes.data == ctypes.addressof(buffer.contents)
    rows[0, 5] = -np.inf
    assert buffer[5] == float("-inf")


@pytest.mark.slow
def test_a_cached_prefix_is_reused_as_a_cold_decode_computes_it(
    forward: LlamaCppForward, prompt: list[int]
) -> None:
    """A repeated prompt decodes only its last token, and a longer one all of what its cache
    cannot give as a cold decode computes it (at least MIN_PIECE tokens in a large call): the
    logits are a cold decode's to the last bit. Tokens a sequence generated (decoded one at a
    time) are never reused by another."""
    np = pytest.importorskip("numpy")
    tokens = prompt * (2 * MIN_PIECE // len(prompt) + 2)  # longer than 2 * MIN_PIECE
    generated = [28, 29, 30]
    short = tokens[: MIN_PIECE - 8]

    def cold(ids: list[int]) -> Any:
        forward.forget()
        sequence = forward.sequence()
        rows = sequence.decode(ids, 1).copy()
        sequence.close()
        return rows

    def after_a_generation() -> None:
        forward.forget()
        first = forward.sequence()
        first.decode(tokens, 1)
        for token in generated:  # "generated": one token a call, as a step decodes them
            first.decode([token], 1)
        first.close()

    cold_rows, cold_longer, cold_short = cold(tokens), cold([*tokens, *generated]), cold(short)
    after_a_generation()
    before = forward.decoded_tokens
    again = forward.sequence()
    warm = again.decode(tokens, 1).copy()
    assert forward.decoded_tokens - before == 1  # only the last token, as a cold decode does
    assert np.array_equal(warm, cold_rows)
    again.close()
    after_a_generation()
    before = forward.decoded_tokens
    longer = forward.sequence()
    warm = longer.decode([*tokens, *generated], 1).copy()
    # The cache holds the prompt's body as a cold decode computes it; its last token and the
    # generated ones were decoded in small calls: the rest is decoded again in a large call.
    body = len(tokens) + len(generated) - 1
    assert forward.decoded_tokens - before == len(tokens) + len(generated) - (body - MIN_PIECE)
    assert np.array_equal(warm, cold_longer)
    longer.close()
    # A prompt shorter than MIN_PIECE + 1 is decoded in small calls: its cache is reused too.
    forward.forget()
    first = forward.sequence()
    first.decode(short, 1)
    first.close()
    before = forward.decoded_tokens
    again = forward.sequence()
    warm = again.decode(short, 1).copy()
    assert forward.decoded_tokens - before == 1
    assert np.array_equal(warm, cold_short)
    again.close()


@pytest.mark.slow
def test_truncate_and_decode_again_gives_the_same_logits(
    forward: LlamaCppForward, prompt: list[int]
) -> None:
    tokens = greedy(forward, prompt, 8)
    sequence = forward.sequence()
    sequence.decode(prompt, 1)
    rows = [sequence.decode([t], 1).copy()[0] for t in tokens]
    sequence.truncate(len(prompt) + 3)
    assert sequence.length == len(prompt) + 3
    before = forward.decoded_tokens
    redo = sequence.decode([tokens[3]], 1).copy()[0]
    assert forward.decoded_tokens - before == 1  # a rewind re-decodes nothing before the cut
    assert float(np.abs(redo - rows[3]).max()) < 1e-4


@pytest.mark.slow
def test_two_sequences_taking_turns_stay_correct(
    forward: LlamaCppForward, prompt: list[int]
) -> None:
    alone = greedy(forward, prompt, 10)
    other_prompt = [*prompt[:-3], *prompt[-3:][::-1]]
    other_alone = greedy(forward, other_prompt, 10)
    a, b = forward.sequence(), forward.sequence()
    out_a = [int(a.decode(prompt, 1)[-1].argmax())]
    out_b = [int(b.decode(other_prompt, 1)[-1].argmax())]
    while len(out_a) < 10:
        out_a.append(int(a.decode(out_a[-1:], 1)[-1].argmax()))
        out_b.append(int(b.decode(out_b[-1:], 1)[-1].argmax()))
    assert out_a == alone
    assert out_b == other_alone


def test_changed_defaults_fail_the_load_check(gguf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A layout that moved shows as fields that do not read their documented defaults."""
    monkeypatch.setattr(
        _llama_cpp,
        "_CONTEXT_HEAD_DEFAULTS",
        {"n_ctx": 512, "n_batch": 2048, "n_ubatch": 512, "n_seq_max": 4},
    )
    with pytest.raises(LoadCheckFailed, match="n_seq_max"):
        load_llama_cpp(gguf, threads=1)


@pytest.mark.slow
def test_a_unified_kv_cache_is_one_sequence_of_the_whole_context(
    gguf: Path, forward: LlamaCppForward, prompt: list[int]
) -> None:
    """``unified=True`` writes llama.cpp's ``kv_unified``: the context made reports each
    sequence as long as all of it (a per-sequence cache reports ``context``), and it decodes
    the prompt to the same greedy token as the per-sequence cache."""
    unified = load_llama_cpp(gguf, threads=1, slots=2, context=512, unified=True)
    try:
        assert unified.unified and not forward.unified
        assert int(unified._lib.llama_n_ctx_seq(unified._ctx)) == 1024
        first = unified.sequence()
        assert int(first.decode(prompt, 1)[-1].argmax()) == greedy(forward, prompt, 1)[0]
        first.close()
    finally:
        unified.close()


def test_kv_unified_is_written_only_where_its_default_reads(
    gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A moved ``kv_unified`` shows as bytes that do not read swa_full's and kv_unified's
    defaults (true, false) before it is written."""
    monkeypatch.setattr(_llama_cpp, "_KV_UNIFIED_OFFSET", 140)
    with pytest.raises(LoadCheckFailed, match="kv_unified"):
        load_llama_cpp(gguf, threads=1, slots=2, context=512, unified=True)


@pytest.fixture
def unbound() -> Iterator[None]:
    """The binding is made again by the test, and restored after it."""
    saved = _llama_cpp._lib
    _llama_cpp._lib = None
    try:
        yield
    finally:
        _llama_cpp._lib = saved


def test_a_missing_symbol_fails_the_load_check(
    gguf: Path, monkeypatch: pytest.MonkeyPatch, unbound: None
) -> None:
    signatures = dict(_llama_cpp._SIGNATURES)
    signatures["llama_no_such_function"] = (None, [])
    monkeypatch.setattr(_llama_cpp, "_SIGNATURES", signatures)
    with pytest.raises(LoadCheckFailed, match="does not export llama_no_such_function"):
        load_llama_cpp(gguf, threads=1)


@pytest.mark.slow
@pytest.mark.torch
def test_a_failed_check_falls_back_to_torch_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(*args: object) -> None:
        raise LoadCheckFailed("llama_context_default_params() starts with something else")

    monkeypatch.setattr(_model, "_load_llama_cpp", failing)
    with caplog.at_level(logging.WARNING, logger="fieldstream"):
        loaded = load_model(device="cpu")
    assert loaded.runtime == "torch"
    assert "runs on torch instead of llama.cpp: llama_context_default_params()" in caplog.text
    # Asked for by name, llama.cpp does not fall back: the caller hears why.
    with pytest.raises(LoadCheckFailed, match="something else"):
        load_model(device="cpu", runtime="llama.cpp")


def test_a_failed_check_without_torch_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where torch is not installed there is nothing to fall back to: the error names what did
    not match and the extra that brings the torch runtime."""

    def failing(*args: object) -> None:
        raise LoadCheckFailed("llama_context_default_params() starts with something else")

    monkeypatch.setattr(_model, "_load_llama_cpp", failing)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(BackendError, match=r"something else.*pip install 'fieldstream\[torch\]'"):
        load_model(device="cpu")
    assert choose_runtime(None, None, None) == "llama.cpp"  # no torch: the CPU


def test_a_gguf_on_the_cpu_runs_on_llama_cpp_by_default(tmp_path: Path) -> None:
    assert choose_runtime(None, None, "cpu") == "llama.cpp"
    assert choose_runtime(None, None, "cuda") == "torch"
    assert choose_runtime("torch", None, "cpu") == "torch"
    directory = tmp_path / "model"
    directory.mkdir()
    assert choose_runtime(None, directory, "cpu") == "torch"


def test_a_runtime_that_cannot_run_the_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reads GGUF files"):
        choose_runtime("llama.cpp", tmp_path, "cpu")
    with pytest.raises(ValueError, match="runs on the CPU, not 'cuda'"):
        choose_runtime("llama.cpp", None, "cuda")
    with pytest.raises(ValueError, match="runtime must be one of"):
        choose_runtime("onnx", None, "cpu")  # type: ignore[arg-type]


def test_a_decode_error_is_a_backend_error(forward: LlamaCppForward) -> None:
    """A sequence longer than the context is refused with a clear error, before decoding."""
    assert forward.context_length is not None
    sequence = forward.sequence()
    before = forward.decoded_tokens
    with pytest.raises(BackendError, match=r"4104 tokens do not fit .* 4096"):
        sequence.decode([28] * (forward.context_length + 8), 1)
    assert sequence.length == 0
    assert forward.decoded_tokens == before


def test_choosing_the_runtime_imports_no_torch_where_no_gpu_can_be() -> None:
    """On a machine without a GPU's device files, the default load decides "cpu" (and so
    llama.cpp) without importing torch, which takes seconds; where a GPU may be, torch is
    asked."""
    code = (
        "import sys\n"
        "from sdk._local._model import choose_runtime\n"
        "print(choose_runtime(None, None, None), 'torch' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    runtime, imported = out.stdout.split()
    if _model.no_gpu_possible():
        assert (runtime, imported) == ("llama.cpp", "False")
    else:  # a GPU machine (the device tool's): torch decides
        assert imported == "True"


def test_no_gpu_is_possible_without_a_gpu_device_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(_model, "_GPU_DEVICE_FILES", ("/nonexistent/nvidiactl",))
    assert _model.no_gpu_possible()
    monkeypatch.setattr(_model, "_GPU_DEVICE_FILES", ("/nonexistent/nvidiactl", "/"))
    assert not _model.no_gpu_possible()
    monkeypatch.setattr(sys, "platform", "win32")
    assert not _model.no_gpu_possible()  # only torch can tell
