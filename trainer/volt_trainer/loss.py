"""Token-level clipped policy loss with truncated importance sampling, k3 KL, and two aggregations."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .config import Aggregation


def token_weights(loss_mask: torch.Tensor, rollout_index: torch.Tensor, aggregation: Aggregation) -> torch.Tensor:
    """[B, R] weights summing to 1, so that loss = sum(per_token * weights) and micro-batches can split it exactly."""
    if aggregation == "token_mean":
        return loss_mask / loss_mask.sum().clamp(min=1)
    # rollout_mean: a rollout's tokens share 1/(its token count), then every rollout weighs 1/(number of rollouts)
    onehot = (rollout_index[None, :] == torch.arange(int(rollout_index.max()) + 1)[:, None]).to(
        loss_mask.dtype
    )  # [N, B]
    per_rollout = onehot @ loss_mask.sum(dim=1)  # [N] trained tokens per rollout
    live = per_rollout > 0
    per_sample = (onehot.T @ torch.where(live, 1 / per_rollout.clamp(min=1), 0.0)) / live.sum().clamp(min=1)  # [B]
    return loss_mask * per_sample[:, None]


@dataclass(frozen=True)
class LossParts:
    loss: torch.Tensor  # scalar, differentiable
    clip_frac: torch.Tensor  # weighted share of tokens whose gradient the clip switched off
    kl: torch.Tensor  # weighted mean k3 estimate of KL(policy || base)
    tis_mean: torch.Tensor  # weighted mean importance weight after the cap


def policy_loss(
    logp: torch.Tensor,  # [B, R] current policy, with grad
    old_logp: torch.Tensor,  # [B, R] policy before this update (no grad)
    rollout_logp: torch.Tensor,  # [B, R] what the inference engine reported when sampling
    ref_logp: torch.Tensor,  # [B, R] base model (adapter disabled)
    advantages: torch.Tensor,  # [B]
    weights: torch.Tensor,  # [B, R] from token_weights (0 on foreign/padded tokens)
    clip_low: float,
    clip_high: float,
    tis_cap: float,
    kl_coef: float,
    objective: str = "policy_gradient",
) -> LossParts:
    """objective "sft" (rejection sampling: the batch holds only good samples, advantage 1) is the plain token NLL
    -A*logp plus the same KL term: no ratio, clip or importance weight, so every epoch and minibatch is supervised."""
    adv = advantages[:, None]  # [B, 1]
    if objective == "sft":
        log_base_ratio = ref_logp - logp  # [B, R]
        k3 = torch.exp(log_base_ratio) - log_base_ratio - 1  # [B, R]
        per_token = -adv * logp + kl_coef * k3
        return LossParts(
            loss=(per_token * weights).sum(),
            clip_frac=torch.zeros((), dtype=weights.dtype, device=weights.device),
            kl=(k3 * weights).sum().detach(),
            tis_mean=weights.sum().detach(),
        )
    ratio = torch.exp(logp - old_logp)  # [B, R]
    surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - clip_low, 1 + clip_high) * adv)  # [B, R]
    tis = torch.exp(old_logp - rollout_logp).clamp(max=tis_cap).detach()  # [B, R] trainer/engine mismatch correction
    log_base_ratio = ref_logp - logp  # [B, R]
    k3 = torch.exp(log_base_ratio) - log_base_ratio - 1  # [B, R] >= 0, unbiased for KL(policy || base)
    per_token = -surrogate * tis + kl_coef * k3  # [B, R]
    clipped = ((ratio < 1 - clip_low) & (adv < 0)) | ((ratio > 1 + clip_high) & (adv > 0))
    return LossParts(
        loss=(per_token * weights).sum(),
        clip_frac=(clipped.to(weights.dtype) * weights).sum().detach(),
        kl=(k3 * weights).sum().detach(),
        tis_mean=(tis * weights).sum(),
    )
