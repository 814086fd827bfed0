"""Chat prompts with tools, and tool calls parsed back out of SmolLM2's output.

SmolLM2-135M's own template ignores ``tools``. When a template does not use them, the tool list is
given in a system message in the format SmolLM2-Instruct was tuned on: definitions inside
``<tools></tools>`` and calls written as ``<tool_call>[{"name": ..., "arguments": {...}}]</tool_call>``.
A single JSON object inside the tags is accepted too (Hermes/Qwen style).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from .protocol import ChatMessage

TOOL_CALL_OPEN = "<tool_call>"
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_TOOLS_SYSTEM = (
    "You are an expert in composing functions. You are given a question and a set of possible functions.\n"
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose.\n"
    "You have access to the following tools:\n<tools>{tools}</tools>\n\n"
    'To call tools, answer only with <tool_call>[{{"name": "func_name", "arguments": {{"arg": "value"}}}}]</tool_call>'
)


def _content_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw or {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw  # the agent sent non-JSON arguments; show them to the model as they were


def _as_template_message(message: ChatMessage) -> dict[str, Any]:
    text = _content_text(message.content)
    if message.tool_calls:
        calls = [
            {"name": c.get("function", {}).get("name"), "arguments": _arguments(c.get("function", {}).get("arguments"))}
            for c in message.tool_calls
        ]
        text += f"{TOOL_CALL_OPEN}{json.dumps(calls)}</tool_call>"
    return {"role": "system" if message.role == "developer" else message.role, "content": text}


def render_chat_prompt(
    tokenizer,
    messages: list[ChatMessage],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool = True,
) -> list[int]:
    """Token ids of the chat prompt, with the generation prompt appended (unless ``add_generation_prompt`` is false:
    then a final assistant message is rendered closed, as the model writes it, tool calls in its own format)."""
    rendered = [_as_template_message(m) for m in messages]
    template = tokenizer.chat_template or ""
    if tools and "tools" not in template:
        definitions = [t.get("function", t) for t in tools]
        system = _TOOLS_SYSTEM.format(tools=json.dumps(definitions))
        if rendered[0]["role"] == "system":
            rendered[0] = {"role": "system", "content": rendered[0]["content"] + "\n\n" + system}
        else:
            rendered.insert(0, {"role": "system", "content": system})
        tools = None
    text = tokenizer.apply_chat_template(
        rendered, tools=tools, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def parse_tool_calls(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Split generated text into (content, OpenAI tool_calls); unparsable calls stay in the content."""
    calls: list[dict[str, Any]] = []
    for match in _TOOL_CALL.finditer(text):
        try:
            payload = json.loads(match.group(1))
        except json.JSONDecodeError:
            return text, []
        for call in payload if isinstance(payload, list) else [payload]:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                return text, []
            arguments = call.get("arguments", {})
            calls.append(
                {
                    "id": f"call_{uuid.uuid4().hex[:24]}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
    if not calls:
        return text, []
    content = _TOOL_CALL.sub("", text).strip()
    return content or None, calls
