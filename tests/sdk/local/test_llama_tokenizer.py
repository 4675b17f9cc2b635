"""The llama.cpp runtime's tokenizer against transformers' tokenizer of the same GGUF.

``LlamaTokenizer`` (llama.cpp's C API, no transformers) must give the torch runtime's tokenizer's
ids, decodes and chat-template renders, or the two runtimes would see different prompts. These
tests compare them on a varied corpus; transformers is the reference, so they need it (the dev
and CI environments install both runtimes).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pydantic
import pytest

from sdk._errors import MissingDependencyError
from sdk._local._chat_template import render_chat
from sdk._local._llama_tokenizer import LlamaTokenizer
from sdk._local._model import default_gguf_path, load_model

TEXTS = [
    "",
    "Hello, world!",
    " leading space",
    "trailing space ",
    "  two leading spaces and   three inside",
    "tabs\tand\t\ttabs",
    "line\nbreaks\n\n\nand\r\nCRLF\r\n",
    "          ",
    "\n\n\n\n",
    "unicode: naïve café, Straße, Ελληνικά, русский, 日本語のテキスト, 한국어, עברית, العربية",
    "emoji: 🙂👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️‍🔥",
    "combining: e\u0301 a\u0308 \u200b zero-width \ufeff bom",
    'code: def f(x):\n    return {"a": [1, 2.5e-3, None]}  # comment\n',
    "numbers 1234567890 3.14159 -42 1e10 0x1F 007",
    '{"name": "Mara", "age": 3, "tags": ["cat", "grey"], "nested": {"ok": true}}',
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "special inside<|endoftext|>text<|im_end|>and <repo_name> <file_sep>",
    "near-special: <|im_start <|im_end| |> <im_start> <|foo|>",
    "punctuation!!! ??? ... --- *** ``` ''' \"\"\" ;;; :::",
    "URLs https://example.com/a?b=c&d=e#f and emails a.b@c.d",
    "mixed CASE ProgrammingLanguage camelCase snake_case kebab-case",
    "don't can't I'm you're we've they'll he'd",
    "\x00 control \x07 chars \x1b[0m",
    "a" * 300,
    "😀" * 40,
]

CONVERSATIONS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "Describe a cat called Mara, aged 3."}],
    [
        {"role": "system", "content": "You answer in JSON."},
        {"role": "user", "content": "Describe a cat.\n\nWith emoji 🐈 please"},
    ],
    [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "  spaces  and <|im_end|> written as text"},
    ],
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city (Celsius).",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "e.g. « Zürich »"}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}},
]

# A template that uses what chat templates of tool-calling models use: tools, tojson with
# options, a namespace, loop controls, the special-token variables, raise_exception, whitespace
# control under trim_blocks / lstrip_blocks.
RICH_TEMPLATE = """{{ bos_token }}
{%- set ns = namespace(system=false) %}
{% if tools %}
<tools>
    {% for tool in tools %}
    {{ tool | tojson }}
    {{ tool.function.parameters | tojson(indent=2, sort_keys=true) }}
    {% endfor %}
</tools>
{% endif %}
{% for message in messages %}
    {% if message.role not in ["system", "user", "assistant"] %}
        {{ raise_exception("unknown role " + message.role) }}
    {% endif %}
    {% if message.role == "system" %}{% set ns.system = true %}{% endif %}
    {% if loop.index > 10 %}{% break %}{% endif %}
<|im_start|>{{ message.role }}
{{ message.content | trim }}{{ eos_token }}
{% endfor %}
{% if not ns.system %}(no system prompt){% endif %}
{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


@pytest.fixture(scope="module")
def gguf() -> Path:
    return default_gguf_path()


@pytest.fixture(scope="module")
def ours() -> LlamaTokenizer:
    loaded = load_model(runtime="llama.cpp", threads=1)
    assert isinstance(loaded.tokenizer, LlamaTokenizer)
    return loaded.tokenizer


@pytest.fixture(scope="module")
def reference(gguf: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    return transformers.AutoTokenizer.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, local_files_only=True
    )


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_ids_and_decodes_are_transformers(ours: LlamaTokenizer, reference: Any, text: str) -> None:
    ids = ours.encode(text, add_special_tokens=False)
    assert ids == reference.encode(text, add_special_tokens=False)
    assert ours(text)["input_ids"] == ids
    assert ours.decode(ids) == reference.decode(ids)
    assert ours.decode(ids, skip_special_tokens=True) == reference.decode(
        ids, skip_special_tokens=True
    )


def test_a_broken_utf8_sequence_decodes_as_transformers(
    ours: LlamaTokenizer, reference: Any
) -> None:
    ids = ours.encode("😀é日")
    for cut in range(len(ids) + 1):
        assert ours.decode(ids[:cut]) == reference.decode(ids[:cut]), cut
        assert ours.decode(ids[cut:]) == reference.decode(ids[cut:]), cut


def test_the_vocabulary_and_its_special_tokens_are_transformers(
    ours: LlamaTokenizer, reference: Any
) -> None:
    assert len(ours) == len(reference)
    assert ours.eos_token_id == reference.eos_token_id
    assert ours.bos_token_id == reference.bos_token_id
    assert ours.special_tokens_map == reference.special_tokens_map
    assert sorted(ours.all_special_ids) == sorted(reference.all_special_ids)
    assert ours.added_tokens_decoder == {
        i: t.content for i, t in reference.added_tokens_decoder.items()
    }
    assert ours.chat_template == reference.chat_template
    # Every token's bytes are the ones transformers decodes it to (special tokens as text).
    for token in range(0, len(ours), 97):
        piece = ours.vocab_bytes[token]
        if piece.decode("utf-8", "ignore").encode() == piece:  # a whole UTF-8 piece
            assert piece.decode() == reference.decode([token]), token


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=range(len(CONVERSATIONS)))
@pytest.mark.parametrize("generation_prompt", [True, False])
def test_the_gguf_chat_template_renders_as_transformers(
    ours: LlamaTokenizer,
    reference: Any,
    conversation: list[dict[str, Any]],
    generation_prompt: bool,
) -> None:
    ours_text = ours.apply_chat_template(
        conversation, tokenize=False, add_generation_prompt=generation_prompt
    )
    assert ours_text == reference.apply_chat_template(
        conversation, tokenize=False, add_generation_prompt=generation_prompt
    )
    assert ours.encode(ours_text) == reference(ours_text, add_special_tokens=False)["input_ids"]
    # With tools too (SmolLM2's template ignores them; the render must still agree).
    assert ours.apply_chat_template(
        conversation, tools=TOOLS, add_generation_prompt=generation_prompt
    ) == reference.apply_chat_template(
        conversation, tools=TOOLS, tokenize=False, add_generation_prompt=generation_prompt
    )


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=range(len(CONVERSATIONS)))
@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no-tools", "tools"])
def test_a_template_with_tools_renders_as_transformers(
    ours: LlamaTokenizer,
    reference: Any,
    conversation: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
) -> None:
    ours_text = render_chat(
        RICH_TEMPLATE,
        conversation,
        tools=tools,
        add_generation_prompt=True,
        special_tokens=ours.special_tokens_map,
    )
    expected = reference.apply_chat_template(
        conversation,
        tools=tools,
        chat_template=RICH_TEMPLATE,
        tokenize=False,
        add_generation_prompt=True,
    )
    assert ours_text == expected
    assert ("<tools>" in ours_text) == (tools is not None)


@dataclasses.dataclass
class _Part:
    type: str
    text: str


class _Call(pydantic.BaseModel):
    name: str
    arguments: str


def test_rich_values_in_messages_render_as_transformers(
    ours: LlamaTokenizer, reference: Any
) -> None:
    # numpy scalars, dataclasses and pydantic models (openai's own message objects) are read as
    # transformers reads them, not as "<int64>" or a truthy "<bool_>" placeholder.
    numpy = pytest.importorskip("numpy")
    template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }} / {{ m.get('n') }}"
        " / {{ 'yes' if m.get('flag') else 'no' }} / {{ m.get('call') }}\n{% endfor %}"
    )
    conversation = [
        {"role": "user", "content": [_Part("text", "hello")], "n": numpy.int64(3)},
        {
            "role": "user",
            "content": "ok",
            "flag": numpy.bool_(False),
            "call": _Call(name="f", arguments="{}"),
        },
    ]
    ours_text = render_chat(template, conversation)
    assert ours_text == reference.apply_chat_template(
        conversation, chat_template=template, tokenize=False
    )
    assert "/ 3 /" in ours_text and "/ no /" in ours_text and "'name': 'f'" in ours_text


def test_raise_exception_and_the_sandbox_hold(ours: LlamaTokenizer) -> None:
    jinja2 = pytest.importorskip("jinja2")
    with pytest.raises(jinja2.TemplateError, match="unknown role tool"):
        render_chat(RICH_TEMPLATE, [{"role": "tool", "content": "x"}])
    with pytest.raises(jinja2.exceptions.SecurityError):
        render_chat("{{ ''.__class__.__mro__ }}", [{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="empty conversation"):
        render_chat("x", [])


def test_llguidance_tokenizes_as_llama_cpp(ours: LlamaTokenizer) -> None:
    ll = ours.ll_tokenizer()
    assert ours.ll_tokenizer() is ll  # built once
    assert ll.vocab_size == len(ours)
    assert ll.eos_token == ours.eos_token_id
    for text in TEXTS:
        if "<|" not in text and "<repo" not in text:
            assert ll.tokenize_str(text) == ours.encode(text), text


def test_a_jinja2_with_known_sandbox_escapes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    jinja2 = pytest.importorskip("jinja2")
    monkeypatch.setattr(jinja2, "__version__", "3.1.5")
    with pytest.raises(MissingDependencyError, match=r"jinja2>=3\.1\.6 .* 3\.1\.5 is installed"):
        render_chat("{{ 'never compiled before' }}", [{"role": "user", "content": "x"}])
