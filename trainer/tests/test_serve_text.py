"""Pure parts of the server: stop strings across tokens, tool prompts and tool-call parsing, top_p sampling."""

from __future__ import annotations

import json

import torch
from volt_trainer.server.chat_format import parse_tool_calls, render_chat_prompt
from volt_trainer.server.detokenize import IncrementalText, token_bytes
from volt_trainer.server.engine import TokenEvent
from volt_trainer.server.generation import ChoiceState
from volt_trainer.server.protocol import ChatMessage
from volt_trainer.server.sampling import SampledToken, SamplingParams, make_generator, sample_token

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def _stream(tokenizer, text: str, stop: tuple[str, ...]) -> tuple[list[str], IncrementalText]:
    incremental = IncrementalText(tokenizer, stop)
    deltas = []
    for token_id in tokenizer(text, add_special_tokens=False)["input_ids"]:
        deltas.append(incremental.add(token_id))
        if incremental.stopped:
            break
    deltas.append(incremental.flush())
    return deltas, incremental


def test_stop_string_split_across_tokens_is_never_emitted(tokenizer) -> None:
    deltas, incremental = _stream(tokenizer, "alpha beta END gamma", ("END",))
    assert incremental.stopped and "".join(deltas) == "alpha beta "
    assert all("E" not in d for d in deltas)


def test_without_stop_the_deltas_rebuild_the_text_exactly(tokenizer) -> None:
    text = "naïve café – 東京 🚀 done"
    deltas, incremental = _stream(tokenizer, text, ())
    assert not incremental.stopped and "".join(deltas) == text
    assert all("\ufffd" not in d for d in deltas)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert bytes(b for i in ids for b in token_bytes(tokenizer, i)).decode("utf-8") == text


def test_tools_go_into_the_prompt(tokenizer) -> None:
    ids = render_chat_prompt(tokenizer, [ChatMessage(role="user", content="Weather in Paris?")], [WEATHER])
    text = tokenizer.decode(ids)
    assert "<tools>" in text and '"name": "get_weather"' in text and text.endswith("<|im_start|>assistant\n")


def test_assistant_tool_calls_and_tool_results_render(tokenizer) -> None:
    messages = [
        ChatMessage(role="user", content="Weather in Paris?"),
        ChatMessage(
            role="assistant",
            content=None,
            tool_calls=[
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        ),
        ChatMessage(role="tool", content="sunny", tool_call_id="c1"),
    ]
    text = tokenizer.decode(render_chat_prompt(tokenizer, messages, [WEATHER]))
    assert '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>' in text
    assert "<|im_start|>tool\nsunny<|im_end|>" in text


def test_tool_calls_parse_list_and_object_forms() -> None:
    content, calls = parse_tool_calls(
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>'
    )
    assert content is None and [c["function"]["name"] for c in calls] == ["get_weather"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Paris"}
    content, calls = parse_tool_calls('Sure. <tool_call>{"name": "a", "arguments": {}}</tool_call>')
    assert content == "Sure." and calls[0]["function"]["arguments"] == "{}"
    assert parse_tool_calls("<tool_call>not json</tool_call>") == ("<tool_call>not json</tool_call>", [])
    assert parse_tool_calls("plain answer") == ("plain answer", [])


def test_streamed_content_holds_back_tool_calls() -> None:
    state = ChoiceState(0, hold_tool_calls=True)
    token = SampledToken(1, -0.1, ())
    released = [state.add(TokenEvent(token, piece, None)) for piece in ["Ok ", "<tool", "_call>[", "]"]]
    released.append(state.add(TokenEvent(token, "</tool_call>", "stop")))
    assert "".join(released) == "Ok " and state.held == "<tool_call>[]</tool_call>"


def test_top_p_keeps_only_the_nucleus_and_greedy_is_argmax() -> None:
    logits = torch.tensor([5.0, 4.0, -5.0, -6.0])
    params = SamplingParams(max_tokens=1, temperature=1.0, top_p=0.5, seed=0)
    generator = make_generator(0)
    assert {sample_token(logits, params, generator).token_id for _ in range(50)} == {0}
    wide = SamplingParams(max_tokens=1, temperature=1.0, top_p=0.99)
    assert {sample_token(logits, wide, generator).token_id for _ in range(200)} == {0, 1}
    greedy = sample_token(logits, SamplingParams(max_tokens=1, temperature=0, top_logprobs=2), generator)
    assert greedy.token_id == 0 and [i for i, _ in greedy.top] == [0, 1]
    assert greedy.logprob == torch.log_softmax(logits, -1)[0].item()
