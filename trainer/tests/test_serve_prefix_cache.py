"""Prefix caching: cached generation equals the uncached path, stays within its memory, and never crosses adapter versions.

Tolerance: token ids must be identical; logprobs may differ by fp32 rounding (a cached prefix is computed in a
different matmul shape than a full prompt), at most 1e-4 nats here (measured ~1e-5).
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx2 as httpx
import pytest
import torch
from peft import LoraConfig, get_peft_model
from volt_trainer.model import DEFAULT_MODEL
from volt_trainer.server.engine import Engine, TokenEvent
from volt_trainer.server.packed_engine import PackedEngine
from volt_trainer.server.prefix_cache import PrefixCache
from volt_trainer.server.sampling import SamplingParams

SYSTEM = "You solve math word problems with a calculator. To calculate, write <calc>expression</calc>. " * 3
QUESTIONS = ["What is 23 * 12?", "Tom has 3 bags with 5 apples each. How many apples?", "What is 50 - 15?"]
LOGPROB_TOLERANCE = 1e-4
ENGINES = pytest.mark.parametrize("engine_class", [Engine, PackedEngine], ids=["hf", "packed"])


class Output:
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.logprobs: list[float] = []
        self.done = threading.Event()

    def __call__(self, event: TokenEvent) -> None:
        assert event.error is None, event.error
        if event.token is not None:
            self.ids.append(event.token.token_id)
            self.logprobs.append(event.token.logprob)
        if event.finish_reason:
            self.done.set()


def _run(engine: Engine, jobs: list[tuple[str, list[int], SamplingParams]]) -> list[Output]:
    """Submit every job at once (so they are batched together) and wait for all of them."""
    outputs = [Output() for _ in jobs]
    for (model, prompt, params), out in zip(jobs, outputs):
        engine.submit(model, prompt, [params], [out])
    assert all(out.done.wait(600) for out in outputs)
    return outputs


def _assert_same(cached: list[Output], uncached: list[Output]) -> None:
    assert [o.ids for o in cached] == [o.ids for o in uncached]
    for a, b in zip(cached, uncached):
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) <= LOGPROB_TOLERANCE


def _rollout_jobs(tokenizer, params) -> list[tuple[str, list[int], SamplingParams]]:
    """Two 'groups' of three rollouts each: shared system prompt, each group sharing its whole first prompt."""
    prompts = [tokenizer(SYSTEM + q)["input_ids"] for q in QUESTIONS[:2]]
    return [("base", prompts[g], params(g * 3 + i)) for g in range(2) for i in range(3)]


def _generate_twice(engine: Engine, jobs) -> tuple[list[Output], list[Output], list[Output], list[Output]]:
    """Turn 1 then turn 2 (prompt = turn 1's prompt + answer + more), first with the cache off, then on."""
    results = []
    for capacity in (0, 64 << 20):
        engine.prefix_cache.max_bytes = capacity
        first = _run(engine, jobs)
        follow = [
            (m, p + out.ids + engine.tokenizer(" Result: 276.")["input_ids"], params)
            for (m, p, params), out in zip(jobs, first)
        ]
        results += [first, _run(engine, follow)]
    return results[0], results[1], results[2], results[3]


@ENGINES
def test_greedy_and_seeded_sampling_match_the_uncached_path_in_concurrent_batches(
    engine_class, model, tokenizer
) -> None:
    engine = engine_class(model, tokenizer, "base", max_batch=8, max_model_len=1024)
    engine.start()
    try:
        for params in (
            lambda i: SamplingParams(max_tokens=4, temperature=0, ignore_eos=True),
            lambda i: SamplingParams(max_tokens=4, temperature=1.0, seed=1000 + i, ignore_eos=True, logprobs=True),
        ):
            engine.prefix_cache.stats.hits = 0
            jobs = _rollout_jobs(tokenizer, params)
            off_1, off_2, on_1, on_2 = _generate_twice(engine, jobs)
            _assert_same(on_1, off_1)
            _assert_same(on_2, off_2)
            # turn 2 alone reuses every full block of turn 1's prompt
            assert engine.prefix_cache.stats.hits >= sum(len(p) // 16 * 16 for _, p, _ in jobs)
            engine.prefix_cache.retain(set())  # next round starts cold
    finally:
        engine.stop()
    assert engine.counters.prefill_tokens > 0 and engine.counters.decode_tokens > 0


@ENGINES
def test_a_small_cache_evicts_within_its_bound_and_stays_correct(engine_class, model, tokenizer) -> None:
    engine = engine_class(model, tokenizer, "base", max_batch=8, max_model_len=1024, prefix_cache_bytes=0)
    engine.start()
    try:
        prompts = [tokenizer(q + " " + SYSTEM)["input_ids"] for q in QUESTIONS]  # no two share a first block
        jobs = [
            ("base", p, SamplingParams(max_tokens=3, temperature=0, ignore_eos=True)) for p in prompts for _ in range(2)
        ]
        uncached = _run(engine, jobs)
        block_bytes = 30 * 2 * 3 * 16 * 64 * 4  # layers x (k, v) x kv heads x block tokens x head dim x fp32
        engine.prefix_cache.max_bytes = 3 * block_bytes  # fewer blocks than one prompt has
        cached = _run(engine, jobs) + _run(engine, jobs)
    finally:
        engine.stop()
    _assert_same(cached[: len(jobs)], uncached)
    _assert_same(cached[len(jobs) :], uncached)
    assert 0 < engine.prefix_cache.bytes <= engine.prefix_cache.max_bytes
    assert engine.prefix_cache.stats.evictions > 0


@ENGINES
def test_a_new_adapter_version_never_reuses_the_old_versions_kv(engine_class, model, tokenizer, tmp_path: Path) -> None:
    dirs = [tmp_path / "v1", tmp_path / "v2"]
    fresh = get_peft_model(
        type(model).from_pretrained(model.name_or_path),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]),
    )
    for seed, directory in enumerate(dirs):
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, param in fresh.named_parameters():
                if "lora_B" in name:
                    param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
        fresh.save_pretrained(directory)
    engine = engine_class(model, tokenizer, "base", max_batch=8, max_model_len=1024, prefix_cache_bytes=64 << 20)
    engine.start()
    try:
        prompt = tokenizer(SYSTEM + QUESTIONS[0])["input_ids"]
        job = [("policy", prompt, SamplingParams(max_tokens=6, temperature=0, ignore_eos=True))]
        engine.call(lambda: engine.adapters.load("policy", str(dirs[0]), False)).result()
        v1 = _run(engine, job)
        engine.call(lambda: engine.adapters.load("policy", str(dirs[1]), True)).result()
        v2_cached = _run(engine, job)  # v1, collected once nothing runs on it, took its blocks with it
        invalidated = engine.prefix_cache.stats.invalidations
        engine.prefix_cache.max_bytes = 0
        v2_uncached = _run(engine, job)
    finally:
        engine.stop()
    assert v1[0].ids != v2_uncached[0].ids  # the two versions really differ on this prompt
    _assert_same(v2_cached, v2_uncached)
    assert invalidated > 0


def test_blocks_are_keyed_by_adapter_version_and_whole_prefix() -> None:
    cache = PrefixCache(max_bytes=1 << 20, block_size=2)
    kv = [(torch.arange(6.0).view(1, 6, 1), -torch.arange(6.0).view(1, 6, 1))]
    cache.insert("a@1", [1, 2, 3, 4, 5, 6], kv)
    assert cache.match("a@2", [1, 2, 3, 4, 5, 6, 7]) == (0, None)  # another version
    assert cache.match("a@1", [9, 2, 3, 4, 5, 6, 7]) == (0, None)  # same later blocks, different first block
    length, hit = cache.match("a@1", [1, 2, 3, 4, 9, 9, 9])
    assert length == 4 and torch.equal(hit[0][0], kv[0][0][:, :4]) and torch.equal(hit[0][1], kv[0][1][:, :4])
    assert cache.match("a@1", [1, 2, 3, 4])[0] == 2  # the last prompt token is always recomputed
    cache.retain({None})
    assert len(cache) == 0 and cache.bytes == 0 and cache.stats.invalidations == 3


def test_metrics_report_hits_and_prefill_tokens(server_url: str) -> None:
    body = {"model": DEFAULT_MODEL, "prompt": SYSTEM + QUESTIONS[2], "max_tokens": 2, "temperature": 0}
    with httpx.Client(base_url=server_url, timeout=300) as http:
        before = _metrics(http)
        for _ in range(2):
            assert http.post("/v1/completions", json=body).status_code == 200
        after = _metrics(http)
    assert after["volt_serve_prefix_cache_enabled"] == 1
    assert after["volt_serve_prefix_cache_hits_total"] - before["volt_serve_prefix_cache_hits_total"] >= 16
    assert after["volt_serve_prefill_tokens_total"] > before["volt_serve_prefill_tokens_total"]
    assert 0 < after["volt_serve_prefix_cache_hit_rate"] <= 1
    assert after["volt_serve_prefix_cache_bytes"] > 0


def _metrics(http: httpx.Client) -> dict[str, float]:
    response = http.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        line.split()[0]: float(line.split()[1])
        for line in response.text.splitlines()
        if line and not line.startswith("#")
    }
