"""Batch files, then padded into tensors. The pipeline writes samples.safetensors (columns, see batch_file.py);
JSON Lines of samples (schemas/sample.schema.json, one per line) are read too, for hand-written batches."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

from .batch_file import BatchError, read_columns, read_loss_scale, read_objective

NonEmptyStr = Annotated[str, Field(min_length=1)]
TokenId = Annotated[StrictInt, Field(ge=0)]
LogProb = Annotated[float, Field(le=0)]


class Sample(BaseModel):
    """Mirror of schemas/sample.schema.json, plus the cross-field rule the schema cannot state (equal lengths)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: NonEmptyStr
    run_id: NonEmptyStr
    iteration: Annotated[StrictInt, Field(ge=0)]
    rollout_id: NonEmptyStr
    attempt: Annotated[StrictInt, Field(ge=0)]
    task_id: NonEmptyStr
    group_id: NonEmptyStr
    span_ids: Annotated[list[str], Field(min_length=1)]
    prompt_ids: Annotated[list[TokenId], Field(min_length=1)]
    response_ids: Annotated[list[TokenId], Field(min_length=1)]
    loss_mask: Annotated[list[Literal[0, 1]], Field(min_length=1)]
    rollout_logprobs: Annotated[list[LogProb], Field(min_length=1)]
    advantage: float
    reward: float | None = None
    truncated: bool | None = None

    @model_validator(mode="after")
    def _equal_lengths(self) -> Sample:
        n = len(self.response_ids)
        for name in ("loss_mask", "rollout_logprobs"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name}: length {len(getattr(self, name))} != response_ids length {n}")
        return self


def read_batch(path: str | Path) -> list[Sample]:
    """Samples of a .safetensors batch file (columns checked with numpy) or of a JSON Lines file (each line validated)."""
    if Path(path).suffix == ".safetensors":
        # read_columns has checked every field and the equal lengths, so validating again per number would only cost time.
        return [Sample.model_construct(**row) for row in read_columns(path)]
    samples: list[Sample] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                samples.append(Sample.model_validate_json(line))
            except ValidationError as e:
                issues = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'sample'}: {err['msg']}" for err in e.errors())
                raise BatchError(f"{path}:{lineno}: {issues}") from None
    if not samples:
        raise BatchError(f"{path}: batch file holds no samples")
    return samples


def batch_loss_scale(path: str | Path) -> float:
    """Factor on the batch's loss: the safetensors header's loss_scale (JSON Lines batches: 1)."""
    return read_loss_scale(path) if Path(path).suffix == ".safetensors" else 1.0


def batch_objective(path: str | Path) -> str:
    """What the batch trains: the safetensors header's objective (JSON Lines batches: policy_gradient)."""
    return read_objective(path) if Path(path).suffix == ".safetensors" else "policy_gradient"


@dataclass(frozen=True)
class Padded:
    """A padded (micro)batch. B samples, L = longest prompt+response, R = longest response."""

    input_ids: torch.Tensor  # [B, L] long, right-padded with 0
    attention_mask: torch.Tensor  # [B, L] long
    positions: torch.Tensor  # [B, R] long: index of the hidden state that predicts each response token
    targets: torch.Tensor  # [B, R] long: response token ids (0 on padding)
    valid: torch.Tensor  # [B, R] bool: a real response token, not padding
    loss_mask: torch.Tensor  # [B, R] float: 1 on trained tokens, 0 on foreign tokens and padding
    rollout_logprobs: torch.Tensor  # [B, R] float
    advantages: torch.Tensor  # [B] float
    rollout_index: torch.Tensor  # [B] long: dense index of the sample's rollout within this batch

    @property
    def tokens(self) -> int:
        return int(self.attention_mask.sum())


def pad(samples: list[Sample]) -> Padded:
    seq = [s.prompt_ids + s.response_ids for s in samples]
    big_l, big_r = max(map(len, seq)), max(len(s.response_ids) for s in samples)
    b = len(samples)
    input_ids = torch.zeros(b, big_l, dtype=torch.long)
    attention = torch.zeros(b, big_l, dtype=torch.long)
    positions = torch.zeros(b, big_r, dtype=torch.long)
    targets = torch.zeros(b, big_r, dtype=torch.long)
    valid = torch.zeros(b, big_r, dtype=torch.bool)
    mask = torch.zeros(b, big_r)
    rollout_lp = torch.zeros(b, big_r)
    rollouts: dict[str, int] = {}
    for i, s in enumerate(samples):
        p, r = len(s.prompt_ids), len(s.response_ids)
        input_ids[i, : p + r] = torch.tensor(seq[i])
        attention[i, : p + r] = 1
        positions[i, :r] = torch.arange(p - 1, p + r - 1)  # hidden state at t predicts token t+1
        targets[i, :r] = torch.tensor(s.response_ids)
        valid[i, :r] = True
        mask[i, :r] = torch.tensor(s.loss_mask, dtype=torch.float32)
        rollout_lp[i, :r] = torch.tensor(s.rollout_logprobs, dtype=torch.float32)
        rollouts.setdefault(s.rollout_id, len(rollouts))
    return Padded(
        input_ids=input_ids,
        attention_mask=attention,
        positions=positions,
        targets=targets,
        valid=valid,
        loss_mask=mask,
        rollout_logprobs=rollout_lp,
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        rollout_index=torch.tensor([rollouts[s.rollout_id] for s in samples], dtype=torch.long),
    )


def split_minibatches(samples: list[Sample], n: int, generator: torch.Generator) -> list[list[int]]:
    """Shuffle rollouts (not samples) and deal them into n minibatches, so rollout_mean sees whole rollouts."""
    by_rollout: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_rollout.setdefault(s.rollout_id, []).append(i)
    groups = list(by_rollout.values())
    order = torch.randperm(len(groups), generator=generator).tolist()
    n = min(n, len(groups))
    return [sorted(i for g in order[k::n] for i in groups[g]) for k in range(n)]
