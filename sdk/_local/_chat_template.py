"""A chat template rendered as transformers renders it, without transformers.

The llama.cpp runtime reads the chat template out of the GGUF file (``tokenizer.chat_template``)
and renders it here, with jinja2, in the environment transformers' ``apply_chat_template`` uses
(``transformers/utils/chat_template_utils.py``), so both runtimes send the model the same
prompt text (``tests/sdk/local/test_llama_tokenizer.py`` compares them):

- a sandboxed, immutable environment (a chat template is untrusted code from a model file),
  ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, and a
  ``{% generation %}`` block that renders its body (transformers tracks assistant spans with
  it; nothing here needs them);
- ``tojson`` as ``json.dumps`` (not jinja's HTML-escaping one), ``raise_exception``,
  ``strftime_now``, a ``dict`` and a ``namespace`` that refuses underscore names;
- the variables: ``messages`` (keys whose value is None dropped), ``tools`` (None when there
  are none), ``documents`` (None), ``add_generation_prompt``, and the named special tokens
  (``bos_token``, ``eos_token``, ``unk_token``, ``pad_token``) as strings.

Everything the template sees is rebuilt from plain JSON values first, as transformers does
(numpy scalars as their Python values, dataclasses and pydantic models as their fields,
anything else as a placeholder naming its type).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sdk._errors import MissingDependencyError
from sdk._local._deps import INSTALL_HINT, require

__all__ = ["render_chat"]

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
"""Names a message's reasoning goes under; the first is the one templates read."""

_MIN_JINJA2 = (3, 1, 6)
"""The first jinja2 without the sandbox escapes transformers refuses older versions for."""

_compiled: dict[str, Any] = {}
_compiled_lock = threading.Lock()


def render_chat(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    special_tokens: Mapping[str, str] | None = None,
    **extra: Any,
) -> str:
    """``template`` rendered over ``messages`` (see the module docstring for what it sees).

    Raises ValueError for an empty conversation, TypeError for a message that is not a
    mapping, and jinja2's ``TemplateError`` for a template that fails (``raise_exception``
    included).
    """
    if not messages:
        raise ValueError("cannot render a chat template over an empty conversation")
    chat: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"message {i} is a {type(message).__name__}, not a mapping")
        plain = _plain({k: v for k, v in message.items() if v is not None})
        reasoning = next((plain[k] for k in _REASONING_FIELDS if plain.get(k) is not None), None)
        if reasoning is not None:
            plain = {"thinking": reasoning, **plain, "reasoning_content": reasoning}
        chat.append(plain)
    variables = {**dict(special_tokens or {}), **extra}
    return str(
        _compile(template).render(
            messages=chat,
            tools=_plain(list(tools)) if tools is not None else None,
            documents=None,
            add_generation_prompt=add_generation_prompt,
            **_plain(variables),
        )
    )


def _plain(value: Any) -> Any:
    """``value`` rebuilt from JSON types only (what the sandbox may safely hand a template)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    numpy = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is imported
    if numpy is not None and isinstance(value, numpy.generic):
        return _plain(value.item())  # np.bool_(False) must not become a truthy "<bool_>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):  # a pydantic model (openai's messages)
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string (``"3.1.6"`` -> ``(3, 1, 6)``)."""
    numbers = []
    for part in version.split(".")[:3]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        numbers.append(int(digits or 0))
    return tuple(numbers)


def _compile(template: str) -> Any:
    with _compiled_lock:
        hit = _compiled.get(template)
        if hit is None:
            hit = _compiled[template] = _environment().from_string(template)
        return hit


def _environment() -> Any:
    version = str(getattr(require("jinja2"), "__version__", "0"))  # names the extra if missing
    if _release(version) < _MIN_JINJA2:
        raise MissingDependencyError(
            f"the chat template needs jinja2>=3.1.6 (older versions have known sandbox escapes, "
            f"and a chat template is untrusted code); {version} is installed: {INSTALL_HINT}"
        )
    import jinja2.ext
    import jinja2.nodes
    import jinja2.sandbox
    import jinja2.utils

    ext, sandbox = jinja2.ext, jinja2.sandbox

    class Generation(ext.Extension):
        """``{% generation %}...{% endgeneration %}``: renders its body."""

        tags = {"generation"}  # noqa: RUF012 (jinja2 declares it a class-level set)

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            call = self.call_method("_body")
            return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return str(caller())

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        x: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: tuple[str, str] | None = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
        )

    def strftime_now(format: str) -> str:
        return datetime.now().strftime(format)

    class TemplateDict:
        def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict(*args, **kwargs)

        def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args: Any, **kwargs: Any) -> None:
            self, rest = args[0], args[1:]
            attrs = dict(*rest, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name: str, value: Any) -> None:
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name: object) -> None:
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"a chat template cannot store the underscore-prefixed attribute {name!r} "
                    "on a namespace"
                )

    env = sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env
