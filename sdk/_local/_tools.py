"""Several tools on the local engine: how the prompt lists them, and the format of the calls.

The local engine writes tool calls as text, under a grammar. The format is SmolLM2's own (the
one its function-calling prompt teaches; its chat template takes no ``tools``): one block that
lists the calls, each call the tool's name and its arguments::

    <tool_call>[
    {"name": "get_weather", "arguments": {"city": "Paris"}},
    {"name": "search", "arguments": {"query": "croissants"}}
    ]</tool_call>

The grammar is an xgrammar structural tag (:func:`tools_structural_tag`): the opening
``<tool_call>[`` line, then one or more *tags* separated by ``,`` and a newline, each tag one
tool's ``{"name": "<tool>", "arguments": `` (its begin), that tool's arguments (its JSON
Schema) and ``}`` (its end), then the closing ``]</tool_call>`` line and the end of the output.
So the model picks a tool by writing its name, and each call's arguments follow its own tool's
schema; nothing but calls can be written (as ``tool_choice: "required"`` asks a server). The
begins and ends are what :mod:`sdk._local._tool_calls` reads back into tool-call deltas.

The prompt: when the chat template reads ``tools`` (``tools=`` of ``apply_chat_template``), the
tools go there, in the OpenAI function format, and a system message says the format above;
otherwise the system message lists the tools too (in a ``<tools>`` block, as SmolLM2's prompt
does). An existing system message is kept and the instructions follow it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sdk._constraints import Tool

__all__ = [
    "CALL_END",
    "CALL_SEPARATOR",
    "TOOLS_CLOSE",
    "TOOLS_OPEN",
    "call_begin",
    "prompt_messages",
    "template_takes_tools",
    "tool_listing",
    "tools_instructions",
    "tools_structural_tag",
]

TOOLS_OPEN = "<tool_call>[\n"
"""What the output begins with."""
TOOLS_CLOSE = "\n]</tool_call>"
"""What the output ends with."""
CALL_SEPARATOR = ",\n"
"""Between two calls."""
CALL_END = "}"
"""What closes a call, after its arguments."""


def call_begin(name: str) -> str:
    """What a call of the tool ``name`` begins with, up to its arguments."""
    return f'{{"name": {json.dumps(name)}, "arguments": '


def tools_structural_tag(tools: Sequence[Tool]) -> dict[str, Any]:
    """The xgrammar structural tag every output of a ``tools`` request follows (see the module
    docstring). Each tag's content is its tool's JSON Schema (the engine lays its JSON out
    like any other: ``sdk._local._xgr_masks``)."""
    tags = [
        {
            "type": "tag",
            "begin": call_begin(t.name),
            "content": {"type": "json_schema", "json_schema": t.compiled.schema_dict()},
            "end": CALL_END,
        }
        for t in tools
    ]
    return {
        "type": "structural_tag",
        "format": {
            "type": "sequence",
            "elements": [
                {"type": "const_string", "value": TOOLS_OPEN},
                {
                    "type": "tags_with_separator",
                    "tags": tags,
                    "separator": CALL_SEPARATOR,
                    "at_least_one": True,
                },
                {"type": "const_string", "value": TOOLS_CLOSE},
            ],
        },
    }


def tool_listing(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The tools in the OpenAI function format (what chat templates that take ``tools`` read)."""
    out: list[dict[str, Any]] = []
    for t in tools:
        function: dict[str, Any] = {"name": t.name}
        if t.description:
            function["description"] = t.description
        function["parameters"] = t.compiled.schema_dict()
        out.append({"type": "function", "function": function})
    return out


def tools_instructions(tools: Sequence[Tool], *, listed: bool) -> str:
    """The system message's instructions: the tools (unless the template ``listed`` them) and
    the format of the calls, with one example call per tool name."""
    lines = [
        "You can call functions. Based on the user's request, call one or more of the "
        "functions below, with the arguments the request gives.",
    ]
    if not listed:
        listing = json.dumps(tool_listing(tools), ensure_ascii=False)
        lines.append(f"You have access to the following tools:\n<tools>{listing}</tools>")
    example = call_begin(tools[0].name) + '{"argument1": "value1"}' + CALL_END
    lines.append(
        "Reply with the calls only, in this format, one call per line:\n"
        f"{TOOLS_OPEN}{example}{CALL_SEPARATOR}(more calls as needed){TOOLS_CLOSE}"
    )
    return "\n".join(lines)


def prompt_messages(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Tool], *, template_takes_tools: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The conversation of a ``tools`` request as the chat template is given it, and the
    ``tools=`` argument of ``apply_chat_template`` (None when the template does not read it).

    The instructions go into the first message when it is a system message (after its text),
    else into a new system message before the conversation.
    """
    text = tools_instructions(tools, listed=template_takes_tools)
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{text}"
    else:
        out.insert(0, {"role": "system", "content": text})
    return out, tool_listing(tools) if template_takes_tools else None


def template_takes_tools(chat_template: object) -> bool:
    """True when a chat template reads ``tools`` (a Jinja template that names the variable)."""
    if isinstance(chat_template, Mapping):
        return any(template_takes_tools(t) for t in chat_template.values())
    return isinstance(chat_template, str) and "tools" in chat_template
