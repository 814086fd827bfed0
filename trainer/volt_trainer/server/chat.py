"""``POST /v1/chat/completions``: chat template (+ tools), sampling, token ids and logprobs, SSE or JSON."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator

from fastapi.responses import StreamingResponse

from .chat_format import parse_tool_calls, render_chat_prompt
from .engine import Engine
from .generation import ChoiceState, Generation
from .logprob_format import chat_logprobs
from .protocol import ChatCompletionRequest


def _sse(payload: dict | str) -> str:
    return f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"


def _finish(state: ChoiceState, tools: bool) -> tuple[str | None, list[dict], str | None]:
    """Final (content, tool_calls, finish_reason) of a choice."""
    if not tools:
        return state.text, [], state.finish_reason
    content, calls = parse_tool_calls(state.text)
    return content, calls, "tool_calls" if calls else state.finish_reason


async def chat_completions(engine: Engine, request: ChatCompletionRequest):
    prompt_ids = render_chat_prompt(engine.tokenizer, request.messages, request.tools)
    if request.max_completion_tokens and not request.max_tokens:
        request.max_tokens = request.max_completion_tokens
    default_max = max(1, engine.max_model_len - len(prompt_ids))
    params = request.sampling(default_max, request.logprobs, request.top_logprobs)
    generation = Generation(engine, request.model, prompt_ids, params)
    head = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "created": int(time.time()),
        "model": generation.served.name,
        "system_fingerprint": generation.served.fingerprint,
    }
    tools = bool(request.tools)
    states = [ChoiceState(i, hold_tool_calls=tools) for i in range(request.n)]
    if request.stream:
        return StreamingResponse(_stream(engine, request, generation, head, states), media_type="text/event-stream")
    async for index, event in generation.events():
        states[index].add(event)
    choices = []
    for state in states:
        content, calls, finish = _finish(state, tools)
        message: dict = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        choice = {
            "index": state.index,
            "message": message,
            "logprobs": chat_logprobs(engine.tokenizer, state) if request.logprobs else None,
            "finish_reason": finish,
            "stop_reason": state.stop_reason,
        }
        if request.return_token_ids:
            choice["token_ids"] = state.token_ids
        choices.append(choice)
    completion_tokens = sum(len(s.token_ids) for s in states)
    body = {
        **head,
        "object": "chat.completion",
        "choices": choices,
        "usage": {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": completion_tokens,
            "total_tokens": len(prompt_ids) + completion_tokens,
        },
    }
    if request.return_token_ids:
        body["prompt_token_ids"] = prompt_ids
    return body


async def _stream(
    engine: Engine, request: ChatCompletionRequest, generation: Generation, head: dict, states: list[ChoiceState]
) -> AsyncIterator[str]:
    chunk_head = {**head, "object": "chat.completion.chunk"}
    for state in states:
        first = {
            **chunk_head,
            "choices": [
                {
                    "index": state.index,
                    "delta": {"role": "assistant", "content": ""},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
        }
        if request.return_token_ids and state.index == 0:
            first["prompt_token_ids"] = generation.prompt_ids
        yield _sse(first)
    try:
        async for index, event in generation.events():
            state = states[index]
            released = state.add(event)
            delta: dict = {"content": released}
            finish = None
            if event.finish_reason:
                content, calls, finish = _finish(state, bool(request.tools))
                if calls:
                    delta = {
                        "content": released or None,
                        "tool_calls": [{"index": i, **call} for i, call in enumerate(calls)],
                    }
                elif state.held:
                    delta = {"content": released + state.held}
            choice = {
                "index": index,
                "delta": delta,
                "logprobs": chat_logprobs(engine.tokenizer, state, len(state.token_ids) - 1)
                if request.logprobs
                else None,
                "finish_reason": finish,
            }
            if finish:
                choice["stop_reason"] = state.stop_reason
            if request.return_token_ids:
                choice["token_ids"] = state.token_ids[-1:]
            yield _sse({**chunk_head, "choices": [choice]})
    except Exception as exc:  # headers are sent already: report the failure in the stream
        yield _sse({"error": {"message": str(exc), "type": "server_error", "param": None, "code": None}})
        return
    if request.stream_options and request.stream_options.include_usage:
        completion_tokens = sum(len(s.token_ids) for s in states)
        prompt_tokens = len(generation.prompt_ids)
        yield _sse(
            {
                **chunk_head,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )
    yield _sse("[DONE]")
