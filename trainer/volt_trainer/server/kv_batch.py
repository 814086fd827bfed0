"""A left-padded batch of sequences sharing one transformers DynamicCache.

Design: sequences admitted together are prefilled together (left-padded), then their cache is
merged into the running batch by left-padding the shorter side with zeros and concatenating on the
batch dimension; a 2-D attention mask hides the padding and explicit position ids keep each sequence's
own positions. Finished sequences are dropped with ``batch_select_indices`` and padding columns that
every remaining row has are trimmed, so the cache never grows past the longest live sequence.
Merging copies the cache, but only when sequences join; decode steps append in place.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache


def _layers(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(layer.keys, layer.values) for layer in cache.layers]


def row_kv(cache: DynamicCache, mask: torch.Tensor, row: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One row's keys/values at its real (unmasked) columns, in order: per layer [kv_heads, tokens, head_dim]."""
    columns = mask[row].nonzero().squeeze(1)
    return [(k[row].index_select(1, columns), v[row].index_select(1, columns)) for k, v in _layers(cache)]


def _left_pad(tensor: torch.Tensor, width: int) -> torch.Tensor:
    if width == 0:
        return tensor
    pad = tensor.new_zeros(tensor.shape[0], tensor.shape[1], width, tensor.shape[3])
    return torch.cat([pad, tensor], dim=2)


class KvBatch:
    def __init__(self) -> None:
        self.cache: DynamicCache | None = None
        self.mask = torch.zeros(0, 0, dtype=torch.long)  # [batch, cached length], 0 = padding
        self.positions: list[int] = []  # next position id of each row = its real cached length

    def __len__(self) -> int:
        return len(self.positions)

    def add(self, cache: DynamicCache, mask: torch.Tensor) -> None:
        """Append prefilled rows (their cache and their [rows, length] left-padded mask) at the end."""
        positions = mask.sum(dim=1).tolist()
        if self.cache is None:
            self.cache, self.mask, self.positions = cache, mask, positions
            return
        width = max(self.mask.shape[1], mask.shape[1])
        old_pad, new_pad = width - self.mask.shape[1], width - mask.shape[1]
        merged = [
            (
                torch.cat([_left_pad(k, old_pad), _left_pad(nk, new_pad)]),
                torch.cat([_left_pad(v, old_pad), _left_pad(nv, new_pad)]),
            )
            for (k, v), (nk, nv) in zip(_layers(self.cache), _layers(cache))
        ]
        self.cache = DynamicCache(ddp_cache_data=merged)
        pad = torch.nn.functional.pad
        self.mask = torch.cat([pad(self.mask, (old_pad, 0)), pad(mask, (new_pad, 0))])
        self.positions.extend(positions)

    def step_inputs(self, last_tokens: list[int]) -> dict:
        """Model kwargs to decode one token per row; extends the mask for the tokens being fed."""
        assert self.cache is not None and len(last_tokens) == len(self)
        device = self.mask.device
        self.mask = torch.cat([self.mask, self.mask.new_ones(len(self), 1)], dim=1)
        inputs = {
            "input_ids": torch.tensor(last_tokens, device=device).unsqueeze(1),
            "attention_mask": self.mask,
            "position_ids": torch.tensor(self.positions, device=device).unsqueeze(1),
            "cache": self.cache,
            "use_cache": True,
        }
        self.positions = [p + 1 for p in self.positions]
        return inputs

    def keep(self, rows: list[int]) -> None:
        """Keep only the given rows (in order); trim padding columns shared by all of them."""
        if len(rows) == len(self):
            return
        if not rows:
            self.__init__()
            return
        assert self.cache is not None
        index = torch.tensor(rows, device=self.mask.device)
        self.cache.batch_select_indices(index)
        self.mask = self.mask.index_select(0, index)
        self.positions = [self.positions[r] for r in rows]
        shared_pad = int((self.mask.cumsum(dim=1) == 0).sum(dim=1).min().item())
        if shared_pad:
            self.mask = self.mask[:, shared_pad:]
            trimmed = [(k[:, :, shared_pad:], v[:, :, shared_pad:]) for k, v in _layers(self.cache)]
            self.cache = DynamicCache(ddp_cache_data=trimmed)
