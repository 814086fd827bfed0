"""Per-token log-probabilities of response tokens, computed only at response positions."""

from __future__ import annotations

import contextlib

import torch
from transformers import PreTrainedModel

from .batch import Padded


def autocast_for(device: torch.device) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA; plain fp32 on CPU (CPU autocast would cost determinism and accuracy for little speed)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def response_logprobs(model: torch.nn.Module, batch: Padded) -> torch.Tensor:
    """[B, R] log p(response token | everything before it); 0 at padded positions.

    Runs the decoder over the whole padded sequence but applies the LM head only at the R response positions,
    which saves the [B, L, V] logits tensor (V = 49k for SmolLM2). Works for a PeftModel: LoRA layers sit inside
    the decoder, so calling the wrapped base model's decoder still goes through them.
    """
    base: PreTrainedModel = model.get_base_model() if hasattr(model, "get_base_model") else model  # type: ignore[assignment]
    device = next(model.parameters()).device
    input_ids = batch.input_ids.to(device)
    with autocast_for(device):
        hidden = base.get_decoder()(
            input_ids=input_ids, attention_mask=batch.attention_mask.to(device)
        ).last_hidden_state  # [B, L, H]
        positions = batch.positions.to(device)[:, :, None].expand(-1, -1, hidden.shape[-1])  # [B, R, H]
        logits = base.get_output_embeddings()(hidden.gather(1, positions))  # [B, R, V]
    targets = batch.targets.to(device)
    # log_softmax + gather rather than cross_entropy: NLLLoss has no deterministic CUDA kernel, gather does
    logp = logits.float().log_softmax(dim=-1).gather(-1, targets[:, :, None])[:, :, 0]  # [B, R]
    return logp * batch.valid.to(device)
