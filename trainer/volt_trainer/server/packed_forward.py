"""One forward pass over many sequences packed into one row of tokens, each attending only to its own KV.

Why not the HF forward on a left-padded batch: there every pad position is computed (a 250-token prompt joining
seven decoding rows costs 8 x 250 positions), a cached prefix leaves a pad gap inside its row that every later
step attends over, and each admission costs a forward of its own. Packed, a step runs its new tokens (one per
decoding sequence, the uncached prompt rest of each admitted one) as one [tokens, hidden] matmul per weight:
pads cost nothing and a step reads the weights once. Attention runs per sequence over its own KV buffer,
allocated once at admission for prompt + max_tokens and written in place (no per-step re-allocation).

It calls the model's own modules (norms, projections, peft's LoRA layers wrapping them, rotary embedding,
MLP), so an active adapter applies exactly as in the HF forward. Llama-architecture models only (SmolLM2);
``supports`` says whether a model qualifies, else the engine keeps the HF path.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn.functional import scaled_dot_product_attention as sdpa

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), each [kv_heads, tokens, head_dim]


class SeqKv:
    """One sequence's keys/values, [layers, 2, kv_heads, capacity, head_dim], valid up to ``length``."""

    def __init__(self, data: torch.Tensor) -> None:
        self.data = data
        self.length = 0

    def load(self, kv: KV) -> None:
        """Start from a cached prefix (per layer [kv_heads, n, head_dim])."""
        n = kv[0][0].shape[1]
        for layer, (k, v) in enumerate(kv):
            self.data[layer, 0, :, :n] = k
            self.data[layer, 1, :, :n] = v
        self.length = n

    def layers(self) -> KV:
        """Views of the valid part, per layer (the prefix cache clones what it keeps)."""
        return [(layer[0, :, : self.length], layer[1, :, : self.length]) for layer in self.data]


@dataclass
class Segment:
    tokens: list[int]  # the tokens this step feeds (decode: the last sampled one; prefill: the uncached prompt rest)
    kv: SeqKv


def supports(model) -> bool:
    inner = getattr(model, "model", None)
    return (
        getattr(model.config, "model_type", None) == "llama"
        and hasattr(inner, "layers")
        and hasattr(inner, "rotary_emb")
    )


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin  # HF's apply_rotary_pos_emb


class PackedForward:
    def __init__(self, model) -> None:
        config = model.config
        self.layer_count = config.num_hidden_layers
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.group = self.heads // self.kv_heads
        weight = model.get_input_embeddings().weight
        self.dtype, self.device = weight.dtype, weight.device

    def new_kv(self, capacity: int) -> SeqKv:
        return SeqKv(
            torch.empty(
                self.layer_count, 2, self.kv_heads, capacity, self.head_dim, dtype=self.dtype, device=self.device
            )
        )

    def __call__(self, lm, segments: list[Segment]) -> torch.Tensor:
        """Feed every segment's tokens; returns the logits after each segment's last token, [segments, vocab]."""
        inner = lm.model
        starts = [s.kv.length for s in segments]
        counts = [len(s.tokens) for s in segments]
        ids = torch.tensor([t for s in segments for t in s.tokens], device=self.device)
        positions = torch.tensor([p for st, c in zip(starts, counts) for p in range(st, st + c)], device=self.device)
        x = inner.embed_tokens(ids)
        cos, sin = inner.rotary_emb(x[None], positions[None])
        cos, sin = cos[0][:, None], sin[0][:, None]  # [tokens, 1, head_dim], broadcast over heads
        bounds, offset = [], 0
        for c in counts:
            bounds.append((offset, offset + c))
            offset += c
        # A prompt rest after a cached prefix attends to all of the prefix and causally to itself (bottom-right).
        masks = [
            torch.ones(c, st + c, dtype=torch.bool, device=self.device).tril(st) if c > 1 and st else None
            for st, c in zip(starts, counts)
        ]
        for index, layer in enumerate(inner.layers):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = _rotate(attn.q_proj(h).view(offset, self.heads, self.head_dim), cos, sin)
            k = _rotate(attn.k_proj(h).view(offset, self.kv_heads, self.head_dim), cos, sin)
            v = attn.v_proj(h).view(offset, self.kv_heads, self.head_dim)
            outs = []
            for seg, st, (a, b), mask in zip(segments, starts, bounds, masks):
                buf, end = seg.kv.data[index], st + b - a
                buf[0, :, st:end] = k[a:b].transpose(0, 1)
                buf[1, :, st:end] = v[a:b].transpose(0, 1)
                keys, values = buf[0, :, :end][None], buf[1, :, :end][None]
                if b - a == 1:  # decode: the query heads of a KV head are the rows of one query block, no mask
                    o = sdpa(q[a].view(1, self.kv_heads, self.group, self.head_dim), keys, values, scale=attn.scaling)
                    outs.append(o.reshape(1, self.heads * self.head_dim))
                else:
                    o = sdpa(
                        q[a:b].transpose(0, 1)[None],
                        keys,
                        values,
                        attn_mask=mask,
                        is_causal=mask is None,
                        scale=attn.scaling,
                        enable_gqa=self.group > 1,
                    )
                    outs.append(o[0].transpose(0, 1).reshape(b - a, self.heads * self.head_dim))
            x = x + attn.o_proj(torch.cat(outs))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        for seg, c in zip(segments, counts):
            seg.kv.length += c
        last = torch.tensor([b - 1 for _, b in bounds], device=self.device)
        return lm.lm_head(inner.norm(x.index_select(0, last)))
