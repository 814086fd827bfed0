"""Response logprobs of a micro-batch whose samples share a prompt prefix, with that prefix run once.

The rollouts of a GRPO group share their whole first prompt (system prompt, worked example, question); the
straightforward update runs that prefix once per sample. Here the decoder runs the longest common prefix once
(batch 1) with its KV kept in the autograd graph, then every sample's own suffix (rest of its prompt + response)
is run against that KV expanded to the batch: gradients flow back into the prefix exactly once (expand's
backward sums them). Mathematically the same logprobs as ``response_logprobs`` on the padded batch; numerically
equal up to fp32 rounding (tested). Micro-batches are formed per group and by length, so suffix padding stays small.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel

from .batch import Sample, pad
from .logprobs import autocast_for, response_logprobs

MIN_SHARED = 16  # below this, one batched pass is cheaper than two


def micro_batches(samples: list[Sample], rows: list[int], size: int) -> list[list[int]]:
    """Split rows (indices into samples) into micro-batches of at most size: one group at a time, longest first."""
    by_group: dict[str, list[int]] = {}
    for row in rows:
        by_group.setdefault(samples[row].group_id, []).append(row)
    out: list[list[int]] = []
    for group in by_group.values():
        ordered = sorted(group, key=lambda r: (-len(samples[r].prompt_ids) - len(samples[r].response_ids), r))
        out += [ordered[i : i + size] for i in range(0, len(ordered), size)]
    return out


def shared_length(samples: list[Sample]) -> int:
    """Longest common prefix of the samples' token sequences, kept short of every response's first predicting position."""
    first = samples[0].prompt_ids
    limit = min(len(s.prompt_ids) for s in samples) - 1  # position p-1 predicts response token 0: it stays in the suffix
    n = 0
    while n < limit and all(s.prompt_ids[n] == first[n] for s in samples):
        n += 1
    return n


def shared_prefix_logprobs(model: torch.nn.Module, samples: list[Sample]) -> tuple[torch.Tensor, int]:
    """([B, R] logprobs as response_logprobs(model, pad(samples)) gives, tokens actually run through the decoder)."""
    p = shared_length(samples) if len(samples) > 1 else 0
    if p < MIN_SHARED:
        padded = pad(samples)
        return response_logprobs(model, padded), padded.tokens
    base: PreTrainedModel = model.get_base_model() if hasattr(model, "get_base_model") else model  # type: ignore[assignment]
    decoder, device = base.get_decoder(), next(model.parameters()).device
    suffixes = [(s.prompt_ids + s.response_ids)[p:] for s in samples]
    b, width, big_r = len(samples), max(map(len, suffixes)), max(len(s.response_ids) for s in samples)
    ids = torch.zeros(b, width, dtype=torch.long)
    mask = torch.zeros(b, p + width, dtype=torch.long)
    mask[:, :p] = 1
    gather = torch.zeros(b, big_r, dtype=torch.long)
    targets = torch.zeros(b, big_r, dtype=torch.long)
    valid = torch.zeros(b, big_r)
    for i, (s, suffix) in enumerate(zip(samples, suffixes)):
        ids[i, : len(suffix)] = torch.tensor(suffix)
        mask[i, p : p + len(suffix)] = 1
        r, start = len(s.response_ids), len(s.prompt_ids) - 1 - p  # suffix index of the state predicting response 0
        gather[i, :r] = torch.arange(start, start + r)
        targets[i, :r] = torch.tensor(s.response_ids)
        valid[i, :r] = 1
    prefix = torch.tensor([samples[0].prompt_ids[:p]], device=device)
    with autocast_for(device):
        cache = DynamicCache()
        decoder(input_ids=prefix, cache=cache, use_cache=True)  # [1, P] once, KV stays in the graph
        layers = [(layer.keys.expand(b, -1, -1, -1), layer.values.expand(b, -1, -1, -1)) for layer in cache.layers]
        positions = torch.arange(p, p + width, device=device)[None].expand(b, -1)
        hidden = decoder(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions,
                         cache=DynamicCache(ddp_cache_data=layers), use_cache=True).last_hidden_state  # [B, S, H]
        picked = hidden.gather(1, gather.to(device)[:, :, None].expand(-1, -1, hidden.shape[-1]))  # [B, R, H]
        logits = base.get_output_embeddings()(picked)  # [B, R, V]
    logp = logits.float().log_softmax(dim=-1).gather(-1, targets.to(device)[:, :, None])[:, :, 0]  # [B, R]
    return logp * valid.to(device), p + sum(map(len, suffixes))
