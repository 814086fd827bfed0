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
- the batch file's loss_scale (header metadata, 1 when absent) multiplies those weights: the pipeline drops groups
  whose rewards are all equal but, by default, counts them in the mean as advantage-0 samples would (TRL's GRPO
  normaliser), so a batch with one informative group of eight makes a step an eighth as large;
- the header's objective "sft" (the pipeline's rejection-sampling estimator: only samples whose reward passed a
  threshold, advantage 1) trains the plain token NLL instead of the clipped surrogate, on the engine's own token ids;
- old logprobs are computed once per batch (no grad) before the first step, then held fixed for all epochs.

update_path "fast" (the default) computes the same update without waste; "reference" keeps the straightforward one
(bench/trainer.py runs both). Fast: micro-batches are one GRPO group at a time, longest first, and the group's
shared prompt prefix runs once with gradients through it once, the LM head only at trained tokens (shared_prefix.py); the first step's samples take
their old logprobs from that step's own forward (detached: the policy has not moved yet), so with one step per
batch there is no old pass at all; the reference pass runs only when kl_coef > 0 (the step's "kl" is then absent).
Equal to the reference path within fp32 rounding (trainer/tests/test_train_fast.py states the tolerances).
Resume is exact on both paths: those first-step old logprobs are saved in state.pt with step 1, so a resumed run
reads them and never recomputes them from the moved policy (trainer/tests/test_train_kill.py SIGKILLs mid-update).
"""

from __future__ import annotations

import argparse
import contextlib
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

from .batch import Sample, batch_loss_scale, batch_objective, pad, read_batch, split_minibatches
from .config import TrainConfig, add_config_flags, load_config
from .logprobs import response_logprobs
from .loss import policy_loss, token_weights
from .model import load_model
from .parent_watch import exit_with_parent
from .shared_prefix import micro_batches, shared_prefix_logprobs
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
    lora = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.target_modules),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(base, lora)


def logprobs_of(model: torch.nn.Module, chunk: list[Sample], fast: bool) -> tuple[torch.Tensor, int]:
    """([B, R] response logprobs, tokens the decoder ran): the shared prefix once (fast) or every padded row (reference)."""
    if fast:
        return shared_prefix_logprobs(model, chunk)
    padded = pad(chunk)
    return response_logprobs(model, padded), padded.tokens


def micro_chunks(samples: list[Sample], rows: list[int], micro: int, fast: bool) -> list[list[int]]:
    return micro_batches(samples, rows, micro) if fast else [rows[s : s + micro] for s in range(0, len(rows), micro)]


@torch.no_grad()
def batch_logprobs(
    model: PeftModel, samples: list[Sample], micro: int, old_rows: list[int], ref_rows: list[int], fast: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(old, ref) logprobs, each [N, R_max] on CPU, for the given rows (others stay 0): current policy, and base model."""
    model.eval()
    width = max(len(s.response_ids) for s in samples)
    old, ref = torch.zeros(len(samples), width), torch.zeros(len(samples), width)
    for target, rows, adapter_off in ((old, old_rows, False), (ref, ref_rows, True)):
        for chunk_rows in micro_chunks(samples, rows, micro, fast):
            with model.disable_adapter() if adapter_off else contextlib.nullcontext():
                logp, _ = logprobs_of(model, [samples[i] for i in chunk_rows], fast)
            target[chunk_rows, : logp.shape[1]] = logp.cpu()
    return old, ref


class Profile:
    """Seconds per phase of the update, accumulated (synchronised on CUDA so a phase owns its kernels)."""

    def __init__(self, device: torch.device | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.device = device

    @contextlib.contextmanager
    def phase(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self.device is not None and self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0


OPTIMIZER_FILE = "optimizer.pt"  # beside the adapter: the next update continues AdamW's moments instead of zeros


def carry_optimizer(optimizer: torch.optim.Optimizer, path: Path, cfg: TrainConfig) -> bool:
    """Continue the previous update's AdamW moments (as one long-lived trainer would), at this update's lr and weight
    decay. A missing file or one of another shape (an adapter from elsewhere) starts from zeros, said on stderr."""
    if not path.is_file():
        return False
    state = torch.load(path, map_location="cpu", weights_only=True)
    try:
        optimizer.load_state_dict(state)
    except (ValueError, KeyError) as e:
        print(f"volt-train: {path} does not fit this adapter ({e}); AdamW starts from zeros", file=sys.stderr)
        return False
    device = next(p for group in optimizer.param_groups for p in group["params"]).device
    for group in optimizer.param_groups:
        group["lr"], group["weight_decay"] = cfg.lr, cfg.weight_decay
    for moments in optimizer.state.values():
        for key, value in moments.items():
            if torch.is_tensor(value) and key != "step":
                moments[key] = value.to(device)
    return True


def save_adapter(model: PeftModel, out: Path, optimizer: torch.optim.Optimizer | None = None) -> tuple[Path, str]:
    final, tmp = out / "adapter", out / ".adapter.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    if optimizer is not None:
        torch.save(optimizer.state_dict(), tmp / OPTIMIZER_FILE)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final, file_sha256(final / "adapter_model.safetensors")


def train(
    batch_path: str,
    out_dir: str,
    cfg: TrainConfig,
    adapter_in: str | None = None,
    resume: bool = False,
    device: str | None = None,
) -> dict[str, Any]:
    profile = Profile()
    fast = cfg.update_path == "fast"
    with_ref = cfg.kl_coef > 0 or not fast  # without the KL term the reference logprobs change nothing
    with profile.phase("load"):
        out, samples, loss_scale = Path(out_dir), read_batch(batch_path), batch_loss_scale(batch_path)
        objective = batch_objective(batch_path)
        run_key = {
            "config": {**cfg.to_json(), "max_steps": 0, "data_dir": ""},
            "batch_sha256": file_sha256(batch_path),
            "adapter_in": adapter_in,
        }
        state = load_state(out / "state") if resume else None
        if state is not None and state["run_key"] != run_key:
            raise ValueError(f"--resume: {out / 'state'} belongs to a different batch, config or adapter_in")
        seed_everything(cfg)
        model = build_policy(cfg, adapter_in, device)
    dev = next(model.parameters()).device
    profile.device = dev
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if state is None and adapter_in:
        carry_optimizer(optimizer, Path(adapter_in) / OPTIMIZER_FILE, cfg)
    plan = [
        (epoch, idx)
        for epoch in range(cfg.epochs)
        for idx in split_minibatches(
            samples, cfg.num_minibatches, torch.Generator().manual_seed(cfg.seed * 1_000_003 + epoch)
        )
    ]

    if state is not None:
        if model.load_state_dict(state["trainable"], strict=False).unexpected_keys:
            raise ValueError(f"--resume: {out / 'state'} holds LoRA weights of a different shape")
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"])
        old_all, ref_all, start, history = state["old_logprobs"], state["ref_logprobs"], state["step"], state["history"]
        print(f"volt-train: resuming at step {start}/{len(plan)}", file=sys.stderr)
    else:
        # fast: the first step runs on the unchanged policy, so its own forward (detached) is its samples' old logprobs
        first = set(plan[0][1]) if fast else set()
        everyone = list(range(len(samples)))
        with profile.phase("old_ref_passes"):
            old_all, ref_all = batch_logprobs(
                model,
                samples,
                cfg.micro_batch_size,
                [i for i in everyone if i not in first],
                everyone if with_ref else [],
                fast,
            )
        start, history = 0, []

    resumed_from = start
    model.train()
    for step in range(start, len(plan)):
        t0 = time.perf_counter()
        epoch, idx = plan[step]
        minibatch = [samples[i] for i in idx]
        whole = pad(minibatch)
        # [b, R]; loss_scale < 1 counts the groups the batch dropped for zero variance in the mean (batch.lossNormalizer)
        weights_all = token_weights(whole.loss_mask, whole.rollout_index, cfg.aggregation) * loss_scale
        where = {row: k for k, row in enumerate(idx)}
        optimizer.zero_grad(set_to_none=True)
        sums = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "tis_mean": 0.0}
        ran = 0
        for rows in micro_chunks(samples, idx, cfg.micro_batch_size, fast):
            chunk = [samples[i] for i in rows]
            with profile.phase("forward"):
                padded = pad(chunk)
                logp, n = logprobs_of(model, chunk, fast)
                r = logp.shape[1]
                if fast and step == 0:
                    old_all[rows, :r] = logp.detach().cpu()
                parts = policy_loss(
                    logp,
                    old_all[rows, :r].to(dev),
                    padded.rollout_logprobs.to(dev),
                    ref_all[rows, :r].to(dev) if with_ref else logp.detach(),
                    padded.advantages.to(dev),
                    weights_all[[where[i] for i in rows], :r].to(dev),
                    clip_low=cfg.clip_low,
                    clip_high=cfg.clip_high,
                    tis_cap=cfg.tis_cap,
                    kl_coef=cfg.kl_coef,
                    objective=objective,
                )
            with profile.phase("backward"):
                parts.loss.backward()
            ran += n
            for k in sums:
                sums[k] += float(getattr(parts, k).detach())
        with profile.phase("optimizer"):
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
            optimizer.step()
        seconds = time.perf_counter() - t0
        if not with_ref:
            del sums["kl"]  # not measured: the reference pass was skipped
        record = {
            "event": "step",
            "step": step + 1,
            "total_steps": len(plan),
            **sums,
            "grad_norm": grad_norm,
            "tokens": whole.tokens,
            "decoder_tokens": ran,
            "tokens_per_s": whole.tokens / seconds,
            "lr": cfg.lr,
            "epoch": epoch,
        }
        history.append(record)
        emit(record)
        with profile.phase("save"):
            save_state(
                out / "state",
                run_key=run_key,
                trainable=trainable_state(model),
                optimizer=optimizer.state_dict(),
                rng=rng_state(),
                step=step + 1,
                old_logprobs=old_all,
                ref_logprobs=ref_all,
                history=history,
            )
        if cfg.max_steps and step + 1 >= cfg.max_steps and step + 1 < len(plan):
            emit({"event": "stopped", "step": step + 1, "total_steps": len(plan), "state_dir": str(out / "state")})
            return {"event": "stopped", "step": step + 1}

    with profile.phase("save"):
        adapter_dir, sha = save_adapter(model, out, optimizer)
    n = max(len(history), 1)
    metrics = {
        "steps": len(history),
        "loss": sum(h["loss"] for h in history) / n,
        "clip_frac": sum(h["clip_frac"] for h in history) / n,
        "tokens": sum(h["tokens"] for h in history),
        "samples": len(samples),
        "loss_scale": loss_scale,
        # > 0 when this process continued a killed update from its saved state, so the operator can see it did
        "resumed_from_step": resumed_from,
    }
    if history and "kl" in history[-1]:
        metrics["kl"] = history[-1]["kl"]
    done = {
        "event": "done",
        "adapter_dir": str(adapter_dir),
        "adapter_sha256": sha,
        "objective": objective,
        "metrics": metrics,
        "profile_s": {k: round(v, 4) for k, v in profile.seconds.items()},
    }
    emit(done)
    return done


def main(argv: list[str] | None = None) -> int:
    exit_with_parent()  # a SIGKILLed worker must not leave this update running beside its retry
    parser = argparse.ArgumentParser(prog="python -m volt_trainer.train", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--batch",
        required=True,
        help="samples.safetensors (sample columns, schemas/sample.schema.json) or JSON Lines (one sample per line)",
    )
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
