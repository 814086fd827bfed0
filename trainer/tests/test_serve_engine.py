"""The engine in-process: sequences joining and leaving a running batch decode like cache-free greedy."""

from __future__ import annotations

import threading

import pytest
import torch
from volt_trainer.server.engine import Engine, TokenEvent
from volt_trainer.server.packed_engine import PackedEngine
from volt_trainer.server.sampling import SamplingParams

PROMPTS = ["The capital of France is", "Once upon a time, in a small village", "1, 2, 3,", "My favourite food"]


class Collector:
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.finish: str | None = None
        self.first = threading.Event()
        self.done = threading.Event()

    def __call__(self, event: TokenEvent) -> None:
        if event.token is not None:
            self.ids.append(event.token.token_id)
        self.first.set()
        if event.finish_reason:
            self.finish = event.finish_reason
            self.done.set()


def _greedy_without_cache(model, ids: list[int], length: int) -> list[int]:
    """Reference: a full forward pass per token, no KV cache, no padding, no batching."""
    out: list[int] = []
    with torch.no_grad():
        for _ in range(length):
            out.append(int(model(torch.tensor([ids + out])).logits[0, -1].argmax()))
    return out


@pytest.mark.parametrize("engine_class", [Engine, PackedEngine], ids=["hf", "packed"])
def test_staggered_admission_and_retirement_match_cache_free_greedy(engine_class, model, tokenizer) -> None:
    lengths = [6, 2, 4, 3]
    expected = [_greedy_without_cache(model, tokenizer(p)["input_ids"], n) for p, n in zip(PROMPTS, lengths)]
    engine = engine_class(model, tokenizer, "base", max_batch=3, max_model_len=512)
    engine.start()
    try:
        collectors = [Collector() for _ in PROMPTS]

        def submit(i):
            return engine.submit(
                "base",
                tokenizer(PROMPTS[i])["input_ids"],
                [SamplingParams(max_tokens=lengths[i], temperature=0, ignore_eos=True)],
                [collectors[i]],
            )

        submit(0)
        assert collectors[0].first.wait(120)
        submit(1)  # joins a batch already decoding, with a different prompt length
        submit(2)
        submit(3)  # waits for a free slot (max_batch=3), admitted when sequence 1 retires
        assert all(c.done.wait(300) for c in collectors)
    finally:
        engine.stop()
    assert [c.ids for c in collectors] == expected
    assert [c.finish for c in collectors] == ["length"] * 4
    assert engine.active_count() == 0


def _sequences(engine, tokenizer, max_tokens: list[int]) -> tuple[list, list[Collector]]:
    collectors = [Collector() for _ in max_tokens]
    seqs = [
        engine.submit(
            "base",
            tokenizer(PROMPTS[i])["input_ids"],
            [SamplingParams(max_tokens=n, temperature=0, ignore_eos=True)],
            [c],
        )[1][0]
        for i, (n, c) in enumerate(zip(max_tokens, collectors))
    ]
    engine._waiting.clear()  # the test drives the steps itself (the scheduler thread is not started)
    return seqs, collectors


def test_packed_steps_admit_into_a_decoding_batch_without_an_extra_forward(model, tokenizer) -> None:
    engine = PackedEngine(model, tokenizer, "base", max_batch=4, max_model_len=512)
    seqs, collectors = _sequences(engine, tokenizer, [5, 3, 2])
    with torch.inference_mode():
        engine._step(seqs[:1])  # prefill A (its first token)
        engine._step(seqs[1:])  # A's second token, and B and C prefilled: one forward
        assert engine.counters.forward_passes == 2 and engine.counters.decode_tokens == 1
        while engine.active_count():
            engine._step([])
    assert engine.counters.forward_passes == 5  # A's five tokens; B and C rode along
    expected = [_greedy_without_cache(model, tokenizer(PROMPTS[i])["input_ids"], n) for i, n in enumerate([5, 3, 2])]
    assert [c.ids for c in collectors] == expected
