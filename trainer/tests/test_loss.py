"""Loss math against values computed by hand on tiny tensors."""

import math

import pytest
import torch
from volt_trainer.loss import policy_loss, token_weights

CLIP = dict(clip_low=0.2, clip_high=0.28)


def run(logp, old, rollout, ref, adv, mask, rollout_index=None, aggregation="token_mean", tis_cap=2.0, kl_coef=0.0):
    logp = torch.tensor(logp, requires_grad=True)
    mask = torch.tensor(mask)
    index = torch.tensor(rollout_index if rollout_index is not None else list(range(mask.shape[0])))
    weights = token_weights(mask, index, aggregation)
    parts = policy_loss(
        logp,
        torch.tensor(old),
        torch.tensor(rollout),
        torch.tensor(ref),
        torch.tensor(adv),
        weights,
        tis_cap=tis_cap,
        kl_coef=kl_coef,
        **CLIP,
    )
    parts.loss.backward()
    return parts, logp.grad


LN = [[math.log(0.5), 0.0, math.log(1.5)]]  # ratios 0.5, 1.0, 1.5 against old logprobs of 0
ZERO = [[0.0, 0.0, 0.0]]
ONES = [[1.0, 1.0, 1.0]]


def test_positive_advantage_clips_above_only():
    parts, grad = run(LN, ZERO, ZERO, LN, [1.0], ONES)
    # -min(r, clip(r, 0.8, 1.28)) per token = -0.5, -1.0, -1.28
    assert parts.loss.item() == pytest.approx(-(0.5 + 1.0 + 1.28) / 3)
    assert parts.clip_frac.item() == pytest.approx(1 / 3)
    # d/dlogp of -r/3 is -r/3 where unclipped; the clipped token gets no gradient
    assert grad.tolist()[0] == pytest.approx([-0.5 / 3, -1.0 / 3, 0.0])


def test_negative_advantage_clips_below_only():
    parts, grad = run(LN, ZERO, ZERO, LN, [-1.0], ONES)
    # -min(-r, -clip(r)) per token = 0.8, 1.0, 1.5
    assert parts.loss.item() == pytest.approx((0.8 + 1.0 + 1.5) / 3)
    assert parts.clip_frac.item() == pytest.approx(1 / 3)
    assert grad.tolist()[0] == pytest.approx([0.0, 1.0 / 3, 1.5 / 3])


def test_truncated_importance_weight_is_capped_and_detached():
    old = [[math.log(0.5)] * 3]
    rollout = [[math.log(0.5), math.log(0.25), math.log(0.1)]]  # raw weights 1, 2, 5
    parts, grad = run(old, old, rollout, old, [1.0], ONES, tis_cap=3.0)
    assert parts.loss.item() == pytest.approx(-(1 + 2 + 3) / 3)
    assert parts.tis_mean.item() == pytest.approx(2.0)
    # ratio is 1, so d(-w*r)/dlogp = -w: the weight scales the gradient but is not differentiated itself
    assert grad.tolist()[0] == pytest.approx([-1 / 3, -2 / 3, -3 / 3])


def test_k3_kl_to_base():
    logp = [[math.log(0.5)]]
    ref = [[math.log(0.25)]]
    parts, grad = run(logp, logp, logp, ref, [0.0], [[1.0]], kl_coef=0.1)
    k3 = 0.5 - math.log(0.5) - 1  # exp(ref-logp) - (ref-logp) - 1
    assert parts.kl.item() == pytest.approx(k3)
    assert parts.loss.item() == pytest.approx(0.1 * k3)
    # d k3/d logp = 1 - exp(ref - logp) = 0.5
    assert grad.item() == pytest.approx(0.1 * 0.5)


def test_kl_is_zero_when_policy_equals_base():
    parts, _ = run(LN, LN, LN, LN, [0.0], ONES, kl_coef=1.0)
    assert parts.kl.item() == 0.0 and parts.loss.item() == 0.0


# rollout 0 = samples 0 (1 trained token, value -1) and 1 (2 tokens, -2); rollout 1 = sample 2 (2 tokens, -3)
AGG_MASK = [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]
AGG = dict(logp=[[0.0] * 3] * 3, old=[[0.0] * 3] * 3, rollout=[[0.0] * 3] * 3, ref=[[0.0] * 3] * 3, adv=[1.0, 2.0, 3.0])


def test_token_mean_weighs_every_token_equally():
    parts, _ = run(**AGG, mask=AGG_MASK, rollout_index=[0, 0, 1], aggregation="token_mean")
    assert parts.loss.item() == pytest.approx(-(1 + 2 * 2 + 2 * 3) / 5)


def test_rollout_mean_weighs_every_rollout_equally():
    parts, _ = run(**AGG, mask=AGG_MASK, rollout_index=[0, 0, 1], aggregation="rollout_mean")
    rollout0 = -(1 + 2 * 2) / 3
    rollout1 = -3.0
    assert parts.loss.item() == pytest.approx((rollout0 + rollout1) / 2)


def test_rollout_without_trained_tokens_does_not_count():
    weights = token_weights(torch.tensor([[1.0, 1.0], [0.0, 0.0]]), torch.tensor([0, 1]), "rollout_mean")
    assert weights.tolist() == [[0.5, 0.5], [0.0, 0.0]]


@pytest.mark.parametrize("aggregation", ["token_mean", "rollout_mean"])
def test_weights_sum_to_one_so_micro_batches_add_up(aggregation):
    weights = token_weights(torch.tensor(AGG_MASK), torch.tensor([0, 0, 1]), aggregation)
    assert weights.sum().item() == pytest.approx(1.0)
