"""Automatic prefix caching: KV of prompt prefixes kept in fixed-size token blocks, reused across requests.

Block-hashed like vLLM's automatic prefix caching (chosen over a radix tree because the engine's KV lives in
one batched DynamicCache per adapter, not in pages: fixed blocks give a flat LRU, an exact byte bound and
a cheap per-block lookup, and the agent's calls share prefixes at block granularity anyway). A block is
the KV of ``block_size`` tokens, keyed by (namespace, parent block key, its tokens), so a key identifies the
whole prefix up to and including it. The namespace is the adapter version serving the request (peft's
internal ``name@hash``, or None for the base model): a new adapter version never sees another's KV.

Eviction is LRU by bytes. A lookup touches the matched chain from its last block back to its first, so a
parent is always more recently used than its children and leaves are evicted first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), each [kv_heads, tokens, head_dim]


@dataclass
class _Block:
    kv: KV
    nbytes: int


@dataclass
class CacheStats:
    queries: int = 0  # prompt tokens looked up
    hits: int = 0  # prompt tokens whose KV came from the cache
    evictions: int = 0  # blocks evicted for space
    invalidations: int = 0  # blocks dropped because their adapter version went away


class PrefixCache:
    def __init__(self, max_bytes: int, block_size: int = 16) -> None:
        if block_size < 1:
            raise ValueError("block_size: must be at least 1")
        self.max_bytes = max_bytes
        self.block_size = block_size
        self.bytes = 0
        self.stats = CacheStats()
        self._blocks: OrderedDict[tuple, _Block] = OrderedDict()
        self._namespaces: set[str | None] = (
            set()
        )  # namespaces that may have blocks (retain is O(1) when none went away)

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def __len__(self) -> int:
        return len(self._blocks)

    def _keys(self, namespace: str | None, tokens: list[int], limit: int) -> list[tuple]:
        """Chained keys of the full blocks within tokens[:limit]."""
        keys, parent = [], None
        b = self.block_size
        for start in range(0, limit - limit % b, b):
            parent = (namespace, parent, tuple(tokens[start : start + b]))
            keys.append(parent)
        return keys

    def match(self, namespace: str | None, tokens: list[int]) -> tuple[int, KV | None]:
        """Longest cached prefix shorter than tokens (the last token is always recomputed: it yields the logits).

        Returns (cached length, per layer [kv_heads, length, head_dim] keys/values) or (0, None).
        """
        if not self.enabled:
            return 0, None
        self.stats.queries += len(tokens)
        found: list[tuple] = []
        for key in self._keys(namespace, tokens, len(tokens) - 1):
            if key not in self._blocks:
                break
            found.append(key)
        if not found:
            return 0, None
        for key in reversed(found):
            self._blocks.move_to_end(key)
        blocks = [self._blocks[k].kv for k in found]
        kv = [
            (torch.cat([blk[layer][0] for blk in blocks], dim=1), torch.cat([blk[layer][1] for blk in blocks], dim=1))
            for layer in range(len(blocks[0]))
        ]
        length = len(found) * self.block_size
        self.stats.hits += length
        return length, kv

    def missing(self, namespace: str | None, tokens: list[int]) -> list[tuple]:
        """Keys of the full prompt blocks not cached yet (used to let one request fill what its twins will reuse)."""
        if not self.enabled:
            return []
        return [k for k in self._keys(namespace, tokens, len(tokens) - 1) if k not in self._blocks]

    def insert(self, namespace: str | None, tokens: list[int], kv: KV) -> None:
        """Store the full blocks of tokens whose KV is given (per layer [kv_heads, len(tokens), head_dim])."""
        if not self.enabled:
            return
        b = self.block_size
        chain = self._keys(namespace, tokens, len(tokens))
        ours = set(chain)
        for index, key in enumerate(chain):
            if key in self._blocks:
                continue
            # clone: a view would pin the whole batched cache tensor it was sliced from
            block = [
                (k[:, index * b : (index + 1) * b].clone(), v[:, index * b : (index + 1) * b].clone()) for k, v in kv
            ]
            nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in block)
            while self.bytes + nbytes > self.max_bytes and self._blocks and next(iter(self._blocks)) not in ours:
                _, old = self._blocks.popitem(last=False)
                self.bytes -= old.nbytes
                self.stats.evictions += 1
            if self.bytes + nbytes > self.max_bytes:
                break  # only this prefix's own blocks are left to evict: a child without its parent is useless
            self._blocks[key] = _Block(block, nbytes)
            self.bytes += nbytes
            self._namespaces.add(namespace)
        for key in reversed(chain):  # parents end up more recent than their children
            if key in self._blocks:
                self._blocks.move_to_end(key)

    def retain(self, namespaces: set[str | None]) -> None:
        """Drop every block of an adapter version that is no longer loaded."""
        if self._namespaces <= namespaces:
            return
        self._namespaces &= namespaces
        stale = [k for k in self._blocks if k[0] not in namespaces]
        for key in stale:
            self.bytes -= self._blocks.pop(key).nbytes
        self.stats.invalidations += len(stale)
