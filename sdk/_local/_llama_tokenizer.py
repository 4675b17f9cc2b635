"""The tokenizer of a GGUF model, over llama.cpp's own C API (no transformers, no torch).

:class:`LlamaTokenizer` is what the llama.cpp runtime tokenizes with: the vocabulary llama.cpp
loaded with the model (``llama_tokenize``, ``llama_token_to_piece``, ``llama_vocab_get_attr``),
and the GGUF's chat template rendered as transformers renders it (``_chat_template``). It offers
the part of a transformers tokenizer the engine uses (``encode``, calling it, ``decode``,
``apply_chat_template``, ``chat_template``, ``eos_token_id``, the special and added tokens), so
the engine reads either the same way; the tests compare it with transformers' tokenizer of the
same GGUF (ids, decodes and chat-template renders).

What transformers does with a GGUF's tokens, it does here too: control tokens (``<|im_end|>``)
are special, user-defined ones (``<think>``) are added but not special, both are matched whole
in the text (``parse_special``), and the named special tokens (``bos_token``, ``eos_token``,
``unk_token``, ``pad_token``) are read from the ``tokenizer.ggml.*_token_id`` metadata.

:meth:`LlamaTokenizer.ll_tokenizer` builds llguidance's tokenizer from the same vocabulary
(once): each token's bytes, control tokens (and user-defined ones shaped like ``<...>``) marked
with a leading ``0xff`` byte so that no grammar text can produce them, and llama.cpp's
``llama_tokenize`` as the function llguidance tokenizes text with (as ``llguidance.llamacpp``
does for llama-cpp-python).

The tokenizer borrows the model's vocabulary: it is valid while the model is loaded.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from sdk._errors import BackendError
from sdk._local._chat_template import render_chat
from sdk._local._deps import require

__all__ = ["ATTR_CONTROL", "ATTR_USER_DEFINED", "LlamaTokenizer"]

ATTR_CONTROL = 1 << 3
"""``LLAMA_TOKEN_ATTR_CONTROL``: a token the chat format writes (``<|im_start|>``)."""
ATTR_USER_DEFINED = 1 << 4
"""``LLAMA_TOKEN_ATTR_USER_DEFINED``: a token added to the vocabulary (``<think>``)."""

_PIECE_BUFFER = 256
"""Bytes first tried for one token's piece (a longer one is read again with its size)."""

_SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "pad_token")
_SPECIAL_KEYS = ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id")


class LlamaTokenizer:
    """The tokenizer of the model ``model`` loaded by llama.cpp's ``lib`` (see the module
    docstring). Thread-safe: llama.cpp's tokenizer functions only read the vocabulary."""

    def __init__(self, lib: Any, model: int) -> None:
        self._lib = lib
        self._model = model
        self._vocab = lib.llama_model_get_vocab(model)
        n = int(lib.llama_vocab_n_tokens(self._vocab))
        self.vocab_size = n
        """Tokens in the vocabulary."""
        pieces: list[bytes] = []
        control: set[int] = set()
        user: set[int] = set()
        buffer = ctypes.create_string_buffer(_PIECE_BUFFER)
        for token in range(n):
            pieces.append(self._piece(token, buffer))
            attr = int(lib.llama_vocab_get_attr(self._vocab, token))
            if attr & ATTR_CONTROL:
                control.add(token)
            elif attr & ATTR_USER_DEFINED:
                user.add(token)
        self.vocab_bytes: list[bytes] = pieces
        """The bytes each token id stands for (special tokens as their text)."""
        self.control_ids: frozenset[int] = frozenset(control)
        """Control tokens (llama.cpp's ``LLAMA_TOKEN_ATTR_CONTROL``)."""
        self.user_defined_ids: frozenset[int] = frozenset(user)
        """User-defined tokens (``LLAMA_TOKEN_ATTR_USER_DEFINED``)."""
        self.chat_template: str | None = self._meta("tokenizer.chat_template")
        """The GGUF's chat template (``tokenizer.chat_template``), or None."""
        self.special_tokens_map: dict[str, str] = {}
        """The named special tokens the GGUF names, as text (what a chat template reads)."""
        self._special_ids: dict[str, int] = {}
        for name, key in zip(_SPECIAL_NAMES, _SPECIAL_KEYS, strict=True):
            value = self._meta(f"tokenizer.ggml.{key}")
            if value is not None and value.strip().lstrip("-").isdigit() and 0 <= int(value) < n:
                self._special_ids[name] = int(value)
                self.special_tokens_map[name] = pieces[int(value)].decode("utf-8", "replace")
        self._ll: Any = None
        self._ll_lock = threading.Lock()

    def __len__(self) -> int:
        return self.vocab_size

    def _piece(self, token: int, buffer: Any) -> bytes:
        n = int(self._lib.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, True))
        if n < 0:
            buffer = ctypes.create_string_buffer(-n)
            n = int(self._lib.llama_token_to_piece(self._vocab, token, buffer, -n, 0, True))
            if n < 0:
                raise BackendError(f"llama.cpp could not write token {token} (status {n})")
        return bytes(buffer.raw[:n])

    def _meta(self, key: str) -> str | None:
        lib, model = self._lib, self._model
        size = 4096
        while True:
            buffer = ctypes.create_string_buffer(size)
            n = int(lib.llama_model_meta_val_str(model, key.encode(), buffer, size))
            if n < 0:
                return None
            if n < size:
                return buffer.raw[:n].decode("utf-8", "replace")
            size = n + 1

    @property
    def eos_token_id(self) -> int | None:
        """The end-of-sequence token (``llama_vocab_eos``), or None."""
        value = int(self._lib.llama_vocab_eos(self._vocab))
        return None if value < 0 else value

    @property
    def bos_token_id(self) -> int | None:
        """The beginning-of-sequence token the GGUF names, or None."""
        return self._special_ids.get("bos_token")

    @property
    def all_special_ids(self) -> list[int]:
        """The named special tokens' ids (as transformers lists them; the other control tokens
        are in :attr:`added_tokens_decoder`)."""
        return sorted(set(self._special_ids.values()))

    @property
    def added_tokens_decoder(self) -> dict[int, str]:
        """The control and user-defined tokens, by id, as text."""
        return {
            i: self.vocab_bytes[i].decode("utf-8", "replace")
            for i in sorted(self.control_ids | self.user_defined_ids)
        }

    def encode(
        self, text: str, add_special_tokens: bool = False, *, split_special_tokens: bool = False
    ) -> list[int]:
        """``text`` as token ids; special tokens written in it are matched whole, unless
        ``split_special_tokens`` (as transformers names it: they are then tokenized as the
        plain text they are written with, llama.cpp's ``parse_special`` off).

        ``add_special_tokens`` adds what the vocabulary adds around a text (a BOS for some
        models); the engine never asks for it (its chat template writes them).
        """
        data = text.encode("utf-8")
        size = len(data) + 8
        while True:
            out = (ctypes.c_int32 * size)()
            n = int(
                self._lib.llama_tokenize(
                    self._vocab,
                    data,
                    len(data),
                    out,
                    size,
                    add_special_tokens,
                    not split_special_tokens,
                )
            )
            if n >= 0:
                return list(out[:n])
            if n == -(2**31):
                raise BackendError(f"llama.cpp cannot tokenize a text of {len(data)} bytes")
            size = -n

    def __call__(
        self, text: str, add_special_tokens: bool = False, *, split_special_tokens: bool = False
    ) -> dict[str, list[int]]:
        """``{"input_ids": self.encode(text, ...)}``, as a transformers tokenizer answers."""
        return {
            "input_ids": self.encode(
                text, add_special_tokens, split_special_tokens=split_special_tokens
            )
        }

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` (invalid UTF-8 replaced by U+FFFD, as transformers does);
        ``skip_special_tokens`` leaves out the named special tokens and the control tokens."""
        skip = set(self._special_ids.values()) | self.control_ids if skip_special_tokens else set()
        vocab = self.vocab_bytes
        data = b"".join(vocab[i] for i in ids if i not in skip)
        return data.decode("utf-8", "replace")

    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        tokenize: bool = False,
        **extra: Any,
    ) -> Any:
        """The GGUF's chat template over ``conversation`` (text, or its ids with
        ``tokenize``), rendered as transformers renders it (``_chat_template``). Raises
        BackendError when the GGUF has no chat template."""
        if not self.chat_template:
            raise BackendError("the GGUF model has no chat template (tokenizer.chat_template)")
        text = render_chat(
            self.chat_template,
            conversation,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            special_tokens=self.special_tokens_map,
            **extra,
        )
        return self.encode(text) if tokenize else text

    def ll_tokenizer(self) -> Any:
        """llguidance's ``LLTokenizer`` over this vocabulary (built on first use, then kept;
        see the module docstring)."""
        with self._ll_lock:
            if self._ll is None:
                llguidance = require("llguidance")
                tokens = [
                    b"\xff" + piece if self._marked(i, piece) else piece
                    for i, piece in enumerate(self.vocab_bytes)
                ]
                fptr = ctypes.cast(self._lib.llama_tokenize, ctypes.c_void_p).value
                self._ll = llguidance.LLTokenizer.from_llamacpp(
                    tokens=tokens,
                    vocab_ptr=self._vocab,
                    tokenize_fptr=fptr,
                    eos_token=self.eos_token_id,
                    slices=None,
                )
            return self._ll

    def _marked(self, token: int, piece: bytes) -> bool:
        if token in self.control_ids:
            return True
        return token in self.user_defined_ids and piece.startswith(b"<") and piece.endswith(b">")
