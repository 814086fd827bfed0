"""The engine on packed steps: each step is ONE forward that decodes every running sequence and prefills every
sequence admitted now (continuous batching as vLLM does), see packed_forward.py — one for all the adapters in flight
too: each LoRA layer adds each adapter's update to its own rows (peft's mixed-adapter batches, adapters.py), as vLLM's
multi-LoRA serving does; ``mix_adapters=False`` runs one forward per adapter instead (the benchmark's "before").

Scheduling, adapters, twins and emitting are the base Engine's; only the step differs. A sequence's KV buffer is
allocated once at admission (prompt + max_tokens), starts from its cached prefix when the prefix cache has one,
and goes back to the cache (prompt + answer) when it finishes. A mixed step's seconds are split between the
prefill and decode counters by token share (each token costs the same matmuls, which dominate a step).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .engine import Engine, Sequence
from .packed_forward import PackedForward, Segment, SeqKv, supports
from .sampling import sample_token


@dataclass
class _Live:
    seq: Sequence
    kv: SeqKv
    feed: list[int]  # tokens the next step runs: the uncached prompt rest, then the last sampled token


class PackedEngine(Engine):
    def __init__(self, model, tokenizer, base_name: str, **options) -> None:
        if not supports(model):
            raise ValueError(
                f"engine: packed steps need a Llama-architecture model, not {model.config.model_type!r} (use engine 'hf')"
            )
        self.mix_adapters = options.pop("mix_adapters", True)
        super().__init__(model, tokenizer, base_name, **options)
        self._forward = PackedForward(model)
        self._live: dict[str | None, list[_Live]] = {}

    def active_count(self) -> int:
        return sum(len(rows) for rows in self._live.values())

    def _live_adapters(self) -> set[str | None]:
        return set(self._live)

    def _step(self, admit: list[Sequence]) -> None:
        by_adapter: dict[str | None, list[Sequence]] = {}
        for seq in admit:
            by_adapter.setdefault(seq.adapter, []).append(seq)
        groups = [
            (key, self._live.get(key, []), by_adapter.get(key, []))
            for key in [*self._live, *(k for k in by_adapter if k not in self._live)]
        ]
        # Several adapters in flight: one forward for all of them (peft's mixed-adapter rows), unless told apart.
        steps = [groups] if self.mix_adapters and len(groups) > 1 else [[g] for g in groups]
        for step in steps:
            seqs = [r.seq for _, rows, _ in step for r in rows] + [s for _, _, new in step for s in new]
            if not self._guard(seqs, lambda st=step: self._advance(st)):
                for key, _, _ in step:
                    self._live.pop(key, None)

    def _admit(self, adapter: str | None, seq: Sequence) -> _Live:
        cached, prefix = self.prefix_cache.match(adapter, seq.prompt_ids)
        kv = self._forward.new_kv(min(len(seq.prompt_ids) + seq.params.max_tokens, self.max_model_len))
        if prefix is not None:
            kv.load(prefix)
        return _Live(seq, kv, seq.prompt_ids[cached:])

    def _advance(self, groups: list[tuple[str | None, list[_Live], list[Sequence]]]) -> None:
        """One packed forward over every running and admitted row of these adapters, then sample and emit."""
        rows: list[tuple[str | None, _Live]] = []
        admitted: list[tuple[str | None, _Live, int]] = []  # with the tokens its cached prefix covered
        decoding = 0
        for adapter, running, new in groups:
            live = [r for r in running if not r.seq.cancelled]
            decoding += len(live)
            fresh = [self._admit(adapter, s) for s in new if not s.cancelled]
            admitted += [(adapter, r, r.kv.length) for r in fresh]
            rows += [(adapter, r) for r in live + fresh]
        if not rows:
            for adapter, _, _ in groups:
                self._live.pop(adapter, None)
            return
        started = time.perf_counter()
        segments = [Segment(r.feed, r.kv) for _, r in rows]
        if len(groups) == 1:
            with self.adapters.active(groups[0][0]) as lm:
                logits = self._forward(lm, segments)
        else:
            with self.adapters.mixed([adapter for adapter, r in rows for _ in r.feed]) as lm:
                logits = self._forward(lm, segments)
            self.counters.mixed_adapter_passes += 1
        tokens = [sample_token(logits[i], r.seq.params, r.seq.generator) for i, (_, r) in enumerate(rows)]
        self._count(sum(len(r.feed) for _, r, _ in admitted), decoding, time.perf_counter() - started)
        block = self.prefix_cache.block_size
        for adapter, r, n in admitted:  # twins deferred one step find the shared prompt blocks here
            if self.prefix_cache.enabled and len(r.seq.prompt_ids) // block > n // block:
                self.prefix_cache.insert(adapter, r.seq.prompt_ids, r.kv.layers())
        keep: dict[str | None, list[_Live]] = {}
        for (adapter, r), token in zip(rows, tokens):
            r.feed = [token.token_id]
            if not self._emit(r.seq, token):
                keep.setdefault(adapter, []).append(r)
            elif not r.seq.cancelled and self.prefix_cache.enabled:
                # prompt + answer: an agent's next call starts with exactly these (the last token was never fed)
                self.prefix_cache.insert(adapter, (r.seq.prompt_ids + r.seq.generated)[: r.kv.length], r.kv.layers())
        for adapter, _, _ in groups:
            if adapter in keep:
                self._live[adapter] = keep[adapter]
            else:
                self._live.pop(adapter, None)

    def _count(self, prefill: int, decode: int, seconds: float) -> None:
        counters = self.counters
        counters.forward_passes += 1
        counters.prefill_tokens += prefill
        counters.decode_tokens += decode
        counters.prefill_seconds += seconds * prefill / (prefill + decode)
        counters.decode_seconds += seconds * decode / (prefill + decode)
