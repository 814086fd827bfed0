"""``POST /v1/completions``: a raw text or token-id prompt, legacy logprobs shape, SSE or JSON."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator

from fastapi.responses import StreamingResponse

from .engine import Engine
from .errors import ApiError
from .generation import ChoiceState, Generation
from .logprob_format import completion_logprobs
from .protocol import CompletionRequest


def _prompt_ids(engine: Engine, request: CompletionRequest) -> list[int]:
    if isinstance(request.prompt, str):
        return engine.tokenizer(request.prompt, add_special_tokens=False)["input_ids"]
    vocab = len(engine.tokenizer)
    if any(not 0 <= t < vocab for t in request.prompt):
        raise ApiError(400, f"prompt: token ids must be in [0, {vocab})", param="prompt")
    return list(request.prompt)


async def completions(engine: Engine, request: CompletionRequest):
    prompt_ids = _prompt_ids(engine, request)
    if not prompt_ids:
        raise ApiError(400, "prompt: must not be empty", param="prompt")
    want_logprobs = request.logprobs is not None
    params = request.sampling(
        max(1, min(16, engine.max_model_len - len(prompt_ids))), want_logprobs, request.logprobs or 0
    )
    generation = Generation(engine, request.model, prompt_ids, params)
    head = {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": generation.served.name,
        "system_fingerprint": generation.served.fingerprint,
    }
    states = [ChoiceState(i) for i in range(request.n)]
    if request.stream:
        return StreamingResponse(_stream(engine, request, generation, head, states), media_type="text/event-stream")
    async for index, event in generation.events():
        states[index].add(event)
    choices = []
    for state in states:
        choice = {
            "index": state.index,
            "text": state.text,
            "logprobs": completion_logprobs(engine.tokenizer, state) if want_logprobs else None,
            "finish_reason": state.finish_reason,
            "stop_reason": state.stop_reason,
        }
        if request.return_token_ids:
            choice["token_ids"] = state.token_ids
        choices.append(choice)
    completion_tokens = sum(len(s.token_ids) for s in states)
    body = {
        **head,
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
    engine: Engine, request: CompletionRequest, generation: Generation, head: dict, states: list[ChoiceState]
) -> AsyncIterator[str]:
    first = True
    try:
        async for index, event in generation.events():
            state = states[index]
            offset = len(state.text)
            text = state.add(event)
            choice = {
                "index": index,
                "text": text,
                "logprobs": completion_logprobs(engine.tokenizer, state, len(state.token_ids) - 1, offset)
                if request.logprobs is not None
                else None,
                "finish_reason": event.finish_reason,
            }
            if event.finish_reason:
                choice["stop_reason"] = event.stop_reason
            if request.return_token_ids:
                choice["token_ids"] = state.token_ids[-1:]
            chunk = {**head, "choices": [choice]}
            if first and request.return_token_ids:
                chunk["prompt_token_ids"] = generation.prompt_ids
            first = False
            yield f"data: {json.dumps(chunk)}\n\n"
    except Exception as exc:  # headers are sent already: report the failure in the stream
        yield f"data: {json.dumps({'error': {'message': str(exc), 'type': 'server_error', 'param': None, 'code': None}})}\n\n"
        return
    if request.stream_options and request.stream_options.include_usage:
        completion_tokens = sum(len(s.token_ids) for s in states)
        usage = {
            "prompt_tokens": len(generation.prompt_ids),
            "completion_tokens": completion_tokens,
            "total_tokens": len(generation.prompt_ids) + completion_tokens,
        }
        yield f"data: {json.dumps({**head, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"
