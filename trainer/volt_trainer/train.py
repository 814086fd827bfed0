"""One GRPO/PPO update of a LoRA adapter from a batch file.

    python -m volt_trainer.train --batch samples.safetensors --out DIR [--adapter-in DIR] [--resume]
        [--config trainer.json] [--lr 5e-5 --epochs 1 --num-minibatches 1 ... any TrainConfig field]

Writes DIR/adapter/ (peft adapter_config.json + adapter_model.safetensors) and DIR/state/ (everything needed to
resume exactly). stdout carries one JSON line per optimizer step ({"event":"step",...}) and a final
{"event":"done",...}; logs go to stderr.

How this departs from textbook PPO / GRPO:
- the loss is token-level: each trained token's clipped surrogate -min(r*A, clip(r, 1-clip_low, 1+clip_high)*A),
  r = exp(logp - old_logp), with one advantage per sample (GRPO group advantage, computed upstream) and no critic;
- truncated importance sampling (TIS): the samples came from an inference engine whose numerics differ from the
  trainer's, so each token's loss is multiplied by min(exp(old_logp - rollout_logp), tis_cap), detached;
- optional KL to the base model uses the k3 estimator exp(ref-logp) - (ref-logp) - 1, where ref is the same model
  with the adapter disabled (no second model copy);
- aggregation is token_mean (all trained tokens of a minibatch weigh the same) or rollout_mean (mean over each
  rollout's tokens, then over rollouts, so long multi-turn rollouts do not dominate); minibatches hold whole
  rollouts, and micro-batches accumulate exactly because per-token weights are computed for the whole minibatch;
- old logprobs are computed once per batch (no grad) before the first step, then held fixed for all epochs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model

from .batch import Sample, pad, read_batch, split_minibatches
from .config import TrainConfig, add_config_flags, load_config
from .logprobs import response_logprobs
from .loss import policy_loss, token_weights
from .model import load_model
from .parent_watch import exit_with_parent
from .train_state import file_sha256, load_state, restore_rng, rng_state, save_state, trainable_state


def emit(event: dict[str, Any]) -> None:
    print(json.dumps(event), flush=True)


def seed_everything(cfg: TrainConfig) -> None:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS reductions
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(cfg.threads)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)


def build_policy(cfg: TrainConfig, adapter_in: str | None, device: str | None) -> PeftModel:
    base, _ = load_model(cfg.model, cfg.data_dir, device=device)
    if adapter_in:
        return PeftModel.from_pretrained(base, adapter_in, is_trainable=True)  # the adapter's own LoRA shape wins
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=list(cfg.target_modules), task_type="CAUSAL_LM")
    return get_peft_model(base, lora)


@torch.no_grad()
def batch_logprobs(model: PeftModel, samples: list[Sample], micro: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(old, ref) logprobs, each [N, R_max] on CPU: current policy, and base model with the adapter disabled."""
    model.eval()
    width = max(len(s.response_ids) for s in samples)
    old, ref = torch.zeros(len(samples), width), torch.zeros(len(samples), width)
    for start in range(0, len(samples), micro):
        chunk = pad(samples[start : start + micro])
        r = chunk.targets.shape[1]
        old[start : start + micro, :r] = response_logprobs(model, chunk).cpu()
        with model.disable_adapter():
            ref[start : start + micro, :r] = response_logprobs(model, chunk).cpu()
    return old, ref


def save_adapter(model: PeftModel, out: Path) -> tuple[Path, str]:
    final, tmp = out / "adapter", out / ".adapter.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final, file_sha256(final / "adapter_model.safetensors")


def train(batch_path: str, out_dir: str, cfg: TrainConfig, adapter_in: str | None = None, resume: bool = False,
          device: str | None = None) -> dict[str, Any]:
    out, samples = Path(out_dir), read_batch(batch_path)
    run_key = {"config": {**cfg.to_json(), "max_steps": 0, "data_dir": ""}, "batch_sha256": file_sha256(batch_path), "adapter_in": adapter_in}
    state = load_state(out / "state") if resume else None
    if state is not None and state["run_key"] != run_key:
        raise ValueError(f"--resume: {out / 'state'} belongs to a different batch, config or adapter_in")
    seed_everything(cfg)
    model = build_policy(cfg, adapter_in, device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    plan = [(epoch, idx) for epoch in range(cfg.epochs)
            for idx in split_minibatches(samples, cfg.num_minibatches, torch.Generator().manual_seed(cfg.seed * 1_000_003 + epoch))]

    if state is not None:
        if model.load_state_dict(state["trainable"], strict=False).unexpected_keys:
            raise ValueError(f"--resume: {out / 'state'} holds LoRA weights of a different shape")
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"])
        old_all, ref_all, start, history = state["old_logprobs"], state["ref_logprobs"], state["step"], state["history"]
        print(f"volt-train: resuming at step {start}/{len(plan)}", file=sys.stderr)
    else:
        old_all, ref_all = batch_logprobs(model, samples, cfg.micro_batch_size)
        start, history = 0, []

    model.train()
    for step in range(start, len(plan)):
        t0 = time.perf_counter()
        epoch, idx = plan[step]
        minibatch = [samples[i] for i in idx]
        whole = pad(minibatch)
        weights_all = token_weights(whole.loss_mask, whole.rollout_index, cfg.aggregation)  # [b, R]
        optimizer.zero_grad(set_to_none=True)
        sums = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "tis_mean": 0.0}
        for s in range(0, len(idx), cfg.micro_batch_size):
            rows = idx[s : s + cfg.micro_batch_size]
            chunk = pad(minibatch[s : s + cfg.micro_batch_size])
            r = chunk.targets.shape[1]
            dev = next(model.parameters()).device
            parts = policy_loss(
                response_logprobs(model, chunk), old_all[rows, :r].to(dev), chunk.rollout_logprobs.to(dev),
                ref_all[rows, :r].to(dev), chunk.advantages.to(dev), weights_all[s : s + len(rows), :r].to(dev),
                clip_low=cfg.clip_low, clip_high=cfg.clip_high, tis_cap=cfg.tis_cap, kl_coef=cfg.kl_coef,
            )
            parts.loss.backward()
            for k in sums:
                sums[k] += float(getattr(parts, k).detach())
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
        optimizer.step()
        seconds = time.perf_counter() - t0
        record = {"event": "step", "step": step + 1, "total_steps": len(plan), **sums, "grad_norm": grad_norm,
                  "tokens": whole.tokens, "tokens_per_s": whole.tokens / seconds, "lr": cfg.lr, "epoch": epoch}
        history.append(record)
        emit(record)
        save_state(out / "state", run_key=run_key, trainable=trainable_state(model), optimizer=optimizer.state_dict(),
                   rng=rng_state(), step=step + 1, old_logprobs=old_all, ref_logprobs=ref_all, history=history)
        if cfg.max_steps and step + 1 >= cfg.max_steps and step + 1 < len(plan):
            emit({"event": "stopped", "step": step + 1, "total_steps": len(plan), "state_dir": str(out / "state")})
            return {"event": "stopped", "step": step + 1}

    adapter_dir, sha = save_adapter(model, out)
    n = max(len(history), 1)
    metrics = {"steps": len(history), "loss": sum(h["loss"] for h in history) / n,
               "clip_frac": sum(h["clip_frac"] for h in history) / n, "kl": history[-1]["kl"] if history else 0.0,
               "tokens": sum(h["tokens"] for h in history), "samples": len(samples)}
    done = {"event": "done", "adapter_dir": str(adapter_dir), "adapter_sha256": sha, "metrics": metrics}
    emit(done)
    return done


def main(argv: list[str] | None = None) -> int:
    exit_with_parent()  # a SIGKILLed worker must not leave this update running beside its retry
    parser = argparse.ArgumentParser(prog="python -m volt_trainer.train", description=__doc__.split("\n")[0])
    parser.add_argument("--batch", required=True, help="samples.safetensors (sample columns, schemas/sample.schema.json) or JSON Lines (one sample per line)")
    parser.add_argument("--out", required=True, help="output dir: adapter/ and state/")
    parser.add_argument("--adapter-in", default=None, help="start from this peft adapter instead of a fresh LoRA")
    parser.add_argument("--resume", action="store_true", help="continue from DIR/state if present")
    parser.add_argument("--config", default=None, help="JSON file with TrainConfig fields; flags override it")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    add_config_flags(parser)
    args = vars(parser.parse_args(argv))
    fixed = {k: args.pop(k) for k in ("batch", "out", "adapter_in", "resume", "config", "device")}
    try:
        cfg = load_config(fixed["config"], args)
        train(fixed["batch"], fixed["out"], cfg, fixed["adapter_in"], fixed["resume"], fixed["device"])
    except ValueError as e:  # bad config or batch: one clear line, exit 2, no traceback
        print(f"volt-train: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
