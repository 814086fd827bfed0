"""Response logprobs of a micro-batch with every shared token run once: the samples packed as one prefix tree.

The rollouts of a GRPO group share their whole first prompt (system prompt, worked example, question); the
straightforward update runs that prefix once per sample and pads every row to the longest. Here the micro-batch's
token sequences are merged into a prefix tree (a token shared by several samples is one node), laid out as one
row with no padding; each node attends to exactly its ancestors (a 4-D tree mask) at position id = its depth, so it
sees what it would see in its own sequence. One forward pass; gradients reach each shared node once and carry
every sample's share. Mathematically the same logprobs as ``response_logprobs`` on the padded batch; numerically
equal up to fp32 rounding (tested) at the trained tokens, the only ones the LM head runs at. Micro-batches are one
group at a time, longest first (``micro_batches``).
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from .batch import Sample
from .logprobs import autocast_for


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


def prefix_tree(samples: list[Sample]) -> tuple[list[int], list[int], list[list[int]]]:
    """(node tokens, node parents (-1 = root), each sample's path of node indices); parents precede children."""
    tokens: list[int] = []
    parents: list[int] = []
    index: dict[tuple[int, int], int] = {}
    paths = []
    for s in samples:
        node, path = -1, []
        for token in s.prompt_ids + s.response_ids:
            child = index.get((node, token))
            if child is None:
                child = index[(node, token)] = len(tokens)
                tokens.append(token)
                parents.append(node)
            path.append(child)
            node = child
        paths.append(path)
    return tokens, parents, paths


def tree_mask(parents: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """([L, L] bool: node i may attend node j iff j is i or an ancestor of i, [L] depth of each node)."""
    n = len(parents)
    allowed = torch.zeros(n, n, dtype=torch.bool)
    depth = torch.zeros(n, dtype=torch.long)
    for i, parent in enumerate(parents):
        if parent >= 0:
            allowed[i] = allowed[parent]
            depth[i] = depth[parent] + 1
        allowed[i, i] = True
    return allowed, depth


def trained_positions(
    samples: list[Sample], paths: list[list[int]]
) -> tuple[list[int], list[int], list[int], list[int]]:
    """(sample row, response index, tree node that predicts it, target token) of every trained (loss_mask 1) token."""
    picked = [
        (i, t, path[len(s.prompt_ids) - 1 + t], token)  # the node before a token predicts it
        for i, (s, path) in enumerate(zip(samples, paths))
        for t, (trained, token) in enumerate(zip(s.loss_mask, s.response_ids))
        if trained
    ]
    rows, cols, nodes, targets = (list(column) for column in zip(*picked)) if picked else ([], [], [], [])
    return rows, cols, nodes, targets


def shared_prefix_logprobs(model: torch.nn.Module, samples: list[Sample]) -> tuple[torch.Tensor, int]:
    """([B, R] logprobs as response_logprobs(model, pad(samples)) gives at trained tokens, 0 elsewhere; tokens the decoder ran).

    The LM head (49k-wide for SmolLM2) runs only at trained tokens: untrained ones (tool replies) and padding weigh 0
    in every loss term, so their logprobs are never needed.
    """
    base: PreTrainedModel = model.get_base_model() if hasattr(model, "get_base_model") else model  # type: ignore[assignment]
    device = next(model.parameters()).device
    tokens, parents, paths = prefix_tree(samples)
    allowed, depth = tree_mask(parents)
    rows, cols, nodes, targets = trained_positions(samples, paths)
    b, big_r = len(samples), max(len(s.response_ids) for s in samples)
    with autocast_for(device):
        dtype = torch.bfloat16 if device.type == "cuda" else next(model.parameters()).dtype
        # sdpa takes a boolean mask (True = attend); eager adds a float one
        mask = (
            allowed
            if base.config._attn_implementation == "sdpa"
            else torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
        )
        hidden = base.get_decoder()(
            input_ids=torch.tensor([tokens], device=device),
            attention_mask=mask[None, None].to(device),
            position_ids=depth[None].to(device),
        ).last_hidden_state[0]  # [L, H]
        logits = base.get_output_embeddings()(hidden[torch.tensor(nodes, dtype=torch.long, device=device)])  # [K, V]
    picked = (
        logits.float()
        .log_softmax(dim=-1)
        .gather(-1, torch.tensor(targets, dtype=torch.long, device=device)[:, None])[:, 0]
    )  # [K]
    where = (torch.tensor(rows, dtype=torch.long, device=device), torch.tensor(cols, dtype=torch.long, device=device))
    return torch.zeros(b, big_r, device=device).index_put(where, picked), len(tokens)
