"""The dynamic-batching engine: one scheduler thread runs every forward pass of the model.

Requests become sequences (one per choice). Between decode steps the scheduler runs queued
commands (adapter load/unload), admits waiting sequences up to ``max_batch`` (prefilling those of
one adapter together), then advances every live sequence by one token. Sequences are grouped by adapter: each
group is one left-padded KV batch (see kv_batch.py) decoded with its adapter set active via peft,
so a step costs one forward pass per adapter in use, never one per request. This is ``--engine hf``, the path
before packed steps (packed_engine.py overrides ``_step``), kept for non-Llama models and as the benchmarks' "before".
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache

from .adapters import AdapterSet
from .detokenize import IncrementalText
from .errors import ApiError
from .kv_batch import KvBatch, row_kv
from .prefix_cache import PrefixCache
from .sampling import SampledToken, SamplingParams, make_generator, sample_token


@dataclass(frozen=True)
class TokenEvent:
    """One generated token (or a terminal error) for one sequence."""

    token: SampledToken | None
    text: str
    finish_reason: str | None
    error: str | None = None
    stop_reason: str | int | None = None  # as vLLM: the stop string that ended the text, None for EOS or length


@dataclass
class Sequence:
    prompt_ids: list[int]
    params: SamplingParams
    adapter: str | None  # internal peft adapter name; None = base
    sink: Callable[[TokenEvent], None]
    text: IncrementalText
    generator: torch.Generator
    generated: list[int] = field(default_factory=list)
    cancelled: bool = False
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass(frozen=True)
class Served:
    """What serves a request: the requested name and its version (``base`` or adapter hash)."""

    name: str
    version: str
    adapter: str | None

    @property
    def fingerprint(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass
class EngineCounters:
    """Where the engine's time goes, as monotonic totals (exported on /metrics)."""

    prefill_tokens: int = 0  # prompt tokens run through the model (cache hits excluded)
    prefill_seconds: float = 0.0
    decode_tokens: int = 0
    decode_seconds: float = 0.0
    forward_passes: int = 0  # model forwards; each costs one read of every weight, however few tokens it runs
    mixed_adapter_passes: int = 0  # packed forwards that served several adapters (or adapter and base) together


@dataclass
class _Group:
    batch: KvBatch = field(default_factory=KvBatch)
    seqs: list[Sequence] = field(default_factory=list)
    last: list[int] = field(default_factory=list)


class Engine:
    def __init__(
        self,
        model,
        tokenizer,
        base_name: str,
        max_batch: int = 8,
        max_model_len: int = 2048,
        prefix_cache_bytes: int = 0,
        prefix_block_size: int = 16,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.base_name = base_name
        self.max_batch = max_batch
        self.max_model_len = max_model_len
        self.adapters = AdapterSet(model)
        self.prefix_cache = PrefixCache(prefix_cache_bytes, prefix_block_size)
        self.counters = EngineCounters()
        self.device = next(model.parameters()).device
        eos = model.generation_config.eos_token_id if model.generation_config else None
        eos_ids = eos if isinstance(eos, list) else [eos]
        self.eos_ids = {i for i in [*eos_ids, tokenizer.eos_token_id] if i is not None}
        self._cond = threading.Condition()
        self._waiting: deque[Sequence] = deque()
        self._commands: list[tuple[Callable[[], Any], Future]] = []
        self._groups: dict[str | None, _Group] = {}
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="volt-engine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout=30)

    def resolve(self, name: str) -> Served:
        if name == self.base_name:
            return Served(name, "base", None)
        version = self.adapters.get(name)
        if version is None:
            raise ApiError(404, f"model: the model {name!r} does not exist", param="model", code="model_not_found")
        return Served(name, version.version, version.internal)

    def call(self, fn: Callable[[], Any]) -> Future:
        """Run fn on the scheduler thread between steps (adapter changes must not race a forward pass)."""
        future: Future = Future()
        with self._cond:
            self._commands.append((fn, future))
            self._cond.notify()
        return future

    def submit(
        self, name: str, prompt_ids: list[int], params: list[SamplingParams], sinks: list[Callable[[TokenEvent], None]]
    ) -> tuple[Served, list[Sequence]]:
        """Queue one sequence per choice; resolving the adapter and queueing is atomic w.r.t. unloads."""
        if len(prompt_ids) + params[0].max_tokens > self.max_model_len:
            raise ApiError(
                400,
                f"max_tokens: prompt ({len(prompt_ids)} tokens) + max_tokens ({params[0].max_tokens}) exceeds the maximum model length {self.max_model_len}",
                param="max_tokens",
            )
        with self._cond:
            served = self.resolve(name)
            seqs = [
                Sequence(
                    prompt_ids, p, served.adapter, sink, IncrementalText(self.tokenizer, p.stop), make_generator(p.seed)
                )
                for p, sink in zip(params, sinks)
            ]
            self._waiting.extend(seqs)
            self._cond.notify()
        return served, seqs

    def cancel(self, seqs: list[Sequence]) -> None:
        for seq in seqs:
            seq.cancelled = True  # the scheduler drops it before its next step

    def active_count(self) -> int:
        return sum(len(g.seqs) for g in self._groups.values())

    def _live_adapters(self) -> set[str | None]:
        """Adapters with sequences being decoded."""
        return set(self._groups)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._stopping or self._waiting or self._commands or self._live_adapters()):
                    self._cond.wait()
                if self._stopping:
                    return
                commands, self._commands = self._commands, []
                admit = [
                    self._waiting.popleft()
                    for _ in range(min(len(self._waiting), self.max_batch - self.active_count()))
                ]
            for fn, future in commands:
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the caller, never kills the loop
                    future.set_exception(exc)
            admit, deferred = self._split_twins(admit)
            if deferred:
                with self._cond:
                    self._waiting.extendleft(reversed(deferred))
            with torch.inference_mode():
                self._step(admit)
            with self._cond:
                busy = {s.adapter for s in self._waiting if s.adapter} | {k for k in self._live_adapters() if k}
                self._guard([], lambda: self.adapters.collect(busy))  # noqa: B023 (called at once)
            self.prefix_cache.retain({None, *self.adapters.loaded()})

    def _step(self, admit: list[Sequence]) -> None:
        """Prefill the admitted sequences (one forward per adapter), then decode every group one token."""
        by_adapter: dict[str | None, list[Sequence]] = {}
        for seq in admit:
            by_adapter.setdefault(seq.adapter, []).append(seq)
        for key, seqs in by_adapter.items():
            self._guard(seqs, lambda k=key, ss=seqs: self._prefill(k, ss))
        for key, group in list(self._groups.items()):
            if not self._guard(group.seqs, lambda k=key, g=group: self._decode(k, g)):
                self._groups.pop(key, None)

    def _guard(self, seqs: list[Sequence], step: Callable[[], None]) -> bool:
        try:
            step()
            return True
        except Exception as exc:  # a failed forward ends its sequences with an error, not the server
            for seq in seqs:
                seq.sink(TokenEvent(None, "", "error", error=f"{type(exc).__name__}: {exc}"))
            return False

    def _split_twins(self, admit: list[Sequence]) -> tuple[list[Sequence], list[Sequence]]:
        """Defer a sequence whose uncached prompt blocks an earlier one admitted now will fill (n choices,
        the rollouts of a group): it waits one decode step and then prefills only what is not shared."""
        if not self.prefix_cache.enabled:
            return admit, []
        claimed: set[tuple] = set()
        now, later = [], []
        for seq in admit:
            missing = self.prefix_cache.missing(seq.adapter, seq.prompt_ids)
            if claimed.intersection(missing):
                later.append(seq)
            else:
                claimed.update(missing)
                now.append(seq)
        return now, later

    def _prefix_cache_inputs(self, adapter: str | None, seqs: list[Sequence]) -> tuple[list[int], DynamicCache]:
        """Cached prefix length of each sequence, and those prefixes as one left-padded cache."""
        hits = [self.prefix_cache.match(adapter, s.prompt_ids) for s in seqs]
        lengths = [n for n, _ in hits]
        width = max(lengths)
        if width == 0:
            return lengths, DynamicCache()
        sample = next(kv for _, kv in hits if kv is not None)
        layers = []
        for layer, (k0, _v0) in enumerate(sample):
            heads, dim = k0.shape[0], k0.shape[2]
            rows_k, rows_v = [], []
            for n, kv in hits:
                pad_k = k0.new_zeros(1, heads, width - n, dim)
                rows_k.append(torch.cat([pad_k, kv[layer][0][None]], dim=2) if kv is not None else pad_k)
                rows_v.append(torch.cat([pad_k, kv[layer][1][None]], dim=2) if kv is not None else pad_k)
            layers.append((torch.cat(rows_k), torch.cat(rows_v)))
        return lengths, DynamicCache(ddp_cache_data=layers)

    def _prefill(self, adapter: str | None, seqs: list[Sequence]) -> None:
        """Prefill sequences admitted together as one batch, then join their adapter's group.

        Row layout: [pad | cached prefix | pad | uncached rest of the prompt]; the mask hides both pads and
        explicit position ids keep each token's own position, so a cached prefix changes no attention."""
        seqs = [s for s in seqs if not s.cancelled]
        if not seqs:
            return
        started = time.perf_counter()
        cached, cache = self._prefix_cache_inputs(adapter, seqs)
        rests = [s.prompt_ids[n:] for s, n in zip(seqs, cached)]
        width, cached_width = max(map(len, rests)), max(cached)
        pad_id = self.tokenizer.pad_token_id or 0
        ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in rests], device=self.device)
        mask = torch.tensor(
            [[0] * (cached_width - n) + [1] * n + [0] * (width - len(r)) + [1] * len(r) for n, r in zip(cached, rests)],
            device=self.device,
        )
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)[:, cached_width:]
        out = self.adapters.forward(
            adapter,
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            cache=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.counters.forward_passes += 1
        tokens = [sample_token(out.logits[row, -1], seq.params, seq.generator) for row, seq in enumerate(seqs)]
        block = self.prefix_cache.block_size
        for row, (seq, n) in enumerate(zip(seqs, cached)):
            if self.prefix_cache.enabled and len(seq.prompt_ids) // block > n // block:
                self.prefix_cache.insert(adapter, seq.prompt_ids, row_kv(cache, mask, row))
        self.counters.prefill_tokens += sum(map(len, rests))
        self.counters.prefill_seconds += time.perf_counter() - started
        # Nothing above touched the running group, so a failure so far only fails these new sequences.
        group = self._groups.setdefault(adapter, _Group())
        first_row = len(group.seqs)
        group.batch.add(cache, mask)
        keep = list(range(first_row))
        for row, (seq, token) in enumerate(zip(seqs, tokens)):
            group.seqs.append(seq)
            group.last.append(token.token_id)
            if not self._emit(seq, token):
                keep.append(first_row + row)
        self._keep(adapter, group, keep)

    def _decode(self, adapter: str | None, group: _Group) -> None:
        self._keep(adapter, group, [i for i, s in enumerate(group.seqs) if not s.cancelled])
        if not group.seqs:
            return
        started = time.perf_counter()
        out = self.adapters.forward(adapter, **group.batch.step_inputs(group.last), logits_to_keep=1)
        self.counters.forward_passes += 1
        keep = []
        for row, seq in enumerate(group.seqs):
            token = sample_token(out.logits[row, -1], seq.params, seq.generator)
            group.last[row] = token.token_id
            if not self._emit(seq, token) and not seq.cancelled:
                keep.append(row)
            elif not seq.cancelled:
                self._remember(adapter, group, row)
        self.counters.decode_tokens += len(group.seqs)
        self.counters.decode_seconds += time.perf_counter() - started
        self._keep(adapter, group, keep)

    def _remember(self, adapter: str | None, group: _Group, row: int) -> None:
        """Cache a finished sequence's prompt + answer: an agent's next call starts with exactly these tokens."""
        if not self.prefix_cache.enabled or group.batch.cache is None:
            return
        seq = group.seqs[row]
        tokens = seq.prompt_ids + seq.generated[:-1]  # the last sampled token was never fed, so has no KV
        kv = row_kv(group.batch.cache, group.batch.mask, row)
        if kv and kv[0][0].shape[1] == len(tokens):
            self.prefix_cache.insert(adapter, tokens, kv)

    def _keep(self, adapter: str | None, group: _Group, rows: list[int]) -> None:
        group.batch.keep(rows)
        group.seqs = [group.seqs[r] for r in rows]
        group.last = [group.last[r] for r in rows]
        if not rows:
            self._groups.pop(adapter, None)

    def _emit(self, seq: Sequence, token: SampledToken) -> bool:
        """Record a token and send it on; True when the sequence is finished."""
        seq.generated.append(token.token_id)
        text = seq.text.add(token.token_id)
        finish = None
        if (token.token_id in self.eos_ids and not seq.params.ignore_eos) or seq.text.stopped:
            finish = "stop"
        elif (
            len(seq.generated) >= seq.params.max_tokens
            or len(seq.prompt_ids) + len(seq.generated) >= self.max_model_len
        ):
            finish = "length"
        if finish:
            text += seq.text.flush()
        seq.sink(TokenEvent(token, text, finish, stop_reason=seq.text.stop_string if finish == "stop" else None))
        return finish is not None
