"""``stop_reason`` as vLLM reports it: the stop string that ended a choice, null for EOS or length; chat and completions, JSON and SSE."""

from __future__ import annotations

import pytest
from openai import OpenAI
from volt_trainer.model import DEFAULT_MODEL
from volt_trainer.server.detokenize import IncrementalText

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def client(server_url: str) -> OpenAI:
    return OpenAI(base_url=f"{server_url}/v1", api_key="unused", max_retries=0, timeout=300)


def test_incremental_text_names_the_stop_string_that_matched(tokenizer) -> None:
    incremental = IncrementalText(tokenizer, ("NEVER", "END", "beta"))
    for token_id in tokenizer("alpha beta END", add_special_tokens=False)["input_ids"]:
        incremental.add(token_id)
        if incremental.stopped:
            break
    assert incremental.stop_string == "beta"
    plain = IncrementalText(tokenizer, ("END",))
    plain.add(tokenizer("alpha", add_special_tokens=False)["input_ids"][0])
    assert plain.stop_string is None and not plain.stopped


def _free_text(client: OpenAI) -> str:
    return client.completions.create(model=DEFAULT_MODEL, prompt=PROMPT, max_tokens=8, temperature=0).choices[0].text


def test_completions_report_the_stop_string_in_json_and_in_the_last_chunk(client: OpenAI) -> None:
    free = _free_text(client)
    assert "." in free, free
    stopped = client.completions.create(
        model=DEFAULT_MODEL, prompt=PROMPT, max_tokens=8, temperature=0, stop=["NEVER", "."]
    ).to_dict()
    choice = stopped["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["stop_reason"] == "."
    assert choice["text"] == free.split(".")[0]
    chunks = [
        c.to_dict()
        for c in client.completions.create(
            model=DEFAULT_MODEL, prompt=PROMPT, max_tokens=8, temperature=0, stop=["NEVER", "."], stream=True
        )
    ]
    last = [c["choices"][0] for c in chunks if c["choices"]][-1]
    assert last["finish_reason"] == "stop" and last["stop_reason"] == "."


def test_a_length_cut_has_no_stop_reason(client: OpenAI) -> None:
    choice = client.completions.create(
        model=DEFAULT_MODEL, prompt=PROMPT, max_tokens=1, temperature=0, stop=["NEVER"]
    ).to_dict()["choices"][0]
    assert choice["finish_reason"] == "length"
    assert "stop_reason" in choice and choice["stop_reason"] is None


def test_chat_reports_the_stop_string_in_json_and_in_the_last_chunk(client: OpenAI) -> None:
    messages = [{"role": "user", "content": "Say hello, then a full stop."}]
    free = (
        client.chat.completions.create(model=DEFAULT_MODEL, messages=messages, max_tokens=16, temperature=0)
        .choices[0]
        .message.content
        or ""
    )
    # Stop at a word the model does say, so the choice ends on a stop string and not at EOS.
    word = free.split()[0]
    result = client.chat.completions.create(
        model=DEFAULT_MODEL, messages=messages, max_tokens=16, temperature=0, stop=[word, "NEVER"]
    ).to_dict()
    choice = result["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["stop_reason"] == word, (free, choice)
    assert word not in choice["message"]["content"]
    stream = client.chat.completions.create(
        model=DEFAULT_MODEL, messages=messages, max_tokens=16, temperature=0, stop=[word, "NEVER"], stream=True
    )
    choices = [c.to_dict()["choices"][0] for c in stream if c.choices]
    assert choices[-1]["finish_reason"] == "stop" and choices[-1]["stop_reason"] == word
    assert all("stop_reason" not in c for c in choices[:-1])
    # Without a stop string the chat turn ends at EOS (or length): no stop string to name.
    eos = client.chat.completions.create(
        model=DEFAULT_MODEL, messages=messages, max_tokens=64, temperature=0
    ).to_dict()["choices"][0]
    assert eos["stop_reason"] is None
