"""Per-sequence sampling from one row of logits, with a per-request generator.

Reported logprobs are the log-softmax of the *raw* logits (before temperature and top_p) of the
chosen token, in fp32: that is the policy's own probability, which the trainer recomputes.
Sampling only reads this sequence's logits and its own torch.Generator, so a seeded request gives
the same tokens whatever else is batched with it (up to fp32 rounding of batched matmuls).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    seed: int | None = None
    ignore_eos: bool = False  # vLLM extension: keep generating past EOS (benchmarks)

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError("max_tokens: must be at least 1")
        if self.temperature < 0:
            raise ValueError("temperature: must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p: must be in (0, 1]")


@dataclass(frozen=True)
class SampledToken:
    token_id: int
    logprob: float
    top: tuple[tuple[int, float], ...]


def make_generator(seed: int | None) -> torch.Generator:
    generator = torch.Generator(device="cpu")
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator


def sample_token(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> SampledToken:
    """Pick the next token from a [vocab] logits row; sampling happens on CPU in fp32 for reproducibility."""
    logits = logits.detach().to(device="cpu", dtype=torch.float32)
    logprobs = torch.log_softmax(logits, dim=-1)
    if params.temperature == 0:
        token_id = int(torch.argmax(logits).item())
    else:
        probs = torch.softmax(logits / params.temperature, dim=-1)
        if params.top_p < 1:
            sorted_probs, order = torch.sort(probs, descending=True)
            # Keep the smallest prefix whose mass reaches top_p (always at least the top token).
            drop = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= params.top_p
            sorted_probs[drop] = 0
            probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
        token_id = int(torch.multinomial(probs, 1, generator=generator).item())
    top: tuple[tuple[int, float], ...] = ()
    if params.top_logprobs > 0:
        values, ids = torch.topk(logprobs, params.top_logprobs)
        top = tuple((int(i), float(v)) for i, v in zip(ids.tolist(), values.tolist()))
    return SampledToken(token_id, float(logprobs[token_id].item()), top)
