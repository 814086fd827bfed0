"""Sampling over HTTP: seeds, n > 1, stop strings, and concurrent batching matching sequential results."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from openai import OpenAI
from volt_trainer.model import DEFAULT_MODEL


@pytest.fixture(scope="module")
def client(server_url: str) -> OpenAI:
    return OpenAI(base_url=f"{server_url}/v1", api_key="unused", max_retries=0, timeout=300)


def _complete(client: OpenAI, prompt: str, **overrides) -> dict:
    args = {
        "model": DEFAULT_MODEL,
        "prompt": prompt,
        "max_tokens": 6,
        "temperature": 0,
        "extra_body": {"return_token_ids": True},
    } | overrides
    return client.completions.create(**args).to_dict()


def test_same_seed_same_tokens_and_n_choices_are_distinct(client: OpenAI) -> None:
    first = _complete(client, "Once upon a time", temperature=1.0, seed=5, n=2)
    again = _complete(client, "Once upon a time", temperature=1.0, seed=5, n=2)
    assert [c["index"] for c in first["choices"]] == [0, 1]
    assert [c["token_ids"] for c in first["choices"]] == [c["token_ids"] for c in again["choices"]]
    assert first["choices"][0]["token_ids"] != first["choices"][1]["token_ids"]
    # Choice i is seeded with seed + i, so it is reproducible on its own.
    single = _complete(client, "Once upon a time", temperature=1.0, seed=6)
    assert single["choices"][0]["token_ids"] == first["choices"][1]["token_ids"]


def test_stop_string_truncates_text_in_both_modes(client: OpenAI) -> None:
    free = _complete(client, "The capital of France is")
    assert "." in free["choices"][0]["text"], free
    stopped = _complete(client, "The capital of France is", stop=["."])
    choice = stopped["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["text"] == free["choices"][0]["text"].split(".")[0]
    streamed = client.completions.create(
        model=DEFAULT_MODEL, prompt="The capital of France is", max_tokens=6, temperature=0, stop=["."], stream=True
    )
    pieces = [c.choices[0] for c in streamed if c.choices]
    assert "".join(p.text for p in pieces) == choice["text"] and pieces[-1].finish_reason == "stop"


def test_eight_concurrent_requests_match_their_sequential_results(client: OpenAI) -> None:
    prompts = [
        f"{topic} is" for topic in ("Water", "The sun", "A cat", "Python", "Music", "The moon", "Bread", "Winter")
    ]
    sequential = [_complete(client, p, max_tokens=5 + i % 3)["choices"][0]["token_ids"] for i, p in enumerate(prompts)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(
            pool.map(
                lambda ip: _complete(client, ip[1], max_tokens=5 + ip[0] % 3)["choices"][0]["token_ids"],
                enumerate(prompts),
            )
        )
    assert concurrent == sequential
