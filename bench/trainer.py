"""Trainer throughput on SmolLM2-135M + LoRA: tokens/s per update step and achieved FLOP/s vs measured matmul peak.

    .venv/bin/python bench/trainer.py [--samples 16 --prompt 128 --response 128 --steps 3 --micro 8 --threads N]

FLOP formula (per optimizer step, T = non-pad tokens, Tr = response tokens, S = sequence length, n = layers):
    forward  F = 2·N_dec·T + 2·H·V·Tr + 4·n·H·S²·B   (decoder weights incl. LoRA, LM head only at response
                                                      positions, attention scores + weighted sum)
    step     = 3·F  (the usual "6·N·T": backward ≈ 2× forward; with frozen base weights the weight-gradient half
                     is mostly skipped, so 2·F is the work actually needed — both figures are printed)
Peak: median fp32 torch.matmul FLOP/s of square matrices, measured in the same run with the same thread count.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trainer"))
from volt_trainer.config import load_config  # noqa: E402
from volt_trainer.model import load_model  # noqa: E402
from volt_trainer.train import train  # noqa: E402


def matmul_peak(n: int, repeats: int) -> tuple[float, float]:
    """Median (FLOP per wall second, FLOP per CPU second of this process)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.matmul(a, b)  # warm-up: thread pool and caches
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        torch.matmul(a, b)
        wall.append(2 * n**3 / (time.perf_counter() - t0))
        cpu.append(2 * n**3 / (time.process_time() - c0))
    return statistics.median(wall), statistics.median(cpu)


def write_batch(path: Path, samples: int, prompt: int, response: int, vocab: int, steps: int) -> None:
    g = torch.Generator().manual_seed(0)
    with path.open("w") as f:
        for i in range(samples * steps):
            ids = torch.randint(0, vocab, (prompt + response,), generator=g).tolist()
            f.write(json.dumps({
                "sample_id": f"s{i}", "run_id": "bench", "iteration": 0, "rollout_id": f"r{i}", "attempt": 0,
                "task_id": f"t{i // 4}", "group_id": f"g{i // 4}", "span_ids": [f"span{i}"],
                "prompt_ids": ids[:prompt], "response_ids": ids[prompt:], "loss_mask": [1] * response,
                "rollout_logprobs": [-10.5] * response, "advantage": 1.0 if i % 2 else -1.0,
            }) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--response", type=int, default=128)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--matmul-n", type=int, default=2048)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    cfg = load_config(None, {"epochs": 1, "num_minibatches": args.steps, "micro_batch_size": args.micro, "threads": args.threads})
    base, _ = load_model(cfg.model, cfg.data_dir, device="cpu")
    c = base.config
    h, vocab, layers = c.hidden_size, c.vocab_size, c.num_hidden_layers
    kv = c.num_key_value_heads * (getattr(c, "head_dim", None) or h // c.num_attention_heads)
    shapes = {"q_proj": (h, h), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (h, h)}  # (in, out) of LoRA'd layers
    n_dec = sum(p.numel() for p in base.get_decoder().layers.parameters())
    del base

    peak_before = matmul_peak(args.matmul_n, 5)
    with tempfile.TemporaryDirectory() as tmp:
        batch = Path(tmp) / "samples.jsonl"
        write_batch(batch, args.samples, args.prompt, args.response, vocab, args.steps)
        captured = io.StringIO()
        t0, c0 = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(captured):
            train(str(batch), tmp, cfg)
        total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
    peak_after = matmul_peak(args.matmul_n, 5)
    peak, peak_cpu = (statistics.median([x, y]) for x, y in zip(peak_before, peak_after))
    steps = [e for e in map(json.loads, captured.getvalue().splitlines()) if e["event"] == "step"]

    lora = layers * sum(cfg.lora_r * sum(shapes[m]) for m in cfg.target_modules)  # A: in×r, B: r×out
    seq, t, tr = args.prompt + args.response, args.samples * (args.prompt + args.response), args.samples * args.response
    fwd = 2 * (n_dec + lora) * t + 2 * h * vocab * tr + 4 * layers * h * seq**2 * args.samples
    step_s = statistics.median(t / e["tokens_per_s"] for e in steps)
    print(f"batch: {args.samples} samples x {seq} tokens ({args.prompt} prompt + {args.response} response), micro-batch {args.micro}, threads {args.threads}")
    print(f"model: N_dec={n_dec / 1e6:.1f}M  LoRA={lora / 1e6:.2f}M  H={h} V={vocab} layers={layers}")
    print(f"{'':34}{'value':>14}")
    print(f"{'step time (median of ' + str(len(steps)) + ')':34}{step_s:>13.2f}s")
    print(f"{'tokens/s per update step':34}{t / step_s:>14.0f}")
    print(f"{'whole run incl. load+old logprobs':34}{total:>13.2f}s")
    print(f"{'matmul peak fp32 (median)':34}{peak / 1e9:>10.1f} GF/s")
    for label, mult in (("achieved, 3·F (6·N·T convention)", 3), ("achieved, 2·F (frozen-base work)", 2)):
        rate = mult * fwd / step_s
        print(f"{label:34}{rate / 1e9:>10.1f} GF/s  = {rate / peak:6.1%} of peak")
    # on a shared CPU, wall time includes waiting for cores; FLOP per CPU-second factors the neighbours out.
    # Whole run = per minibatch one no-grad forward each for old and reference logprobs (2·F) plus the step (3·F).
    run_flop = len(steps) * 5 * fwd
    print(f"{'matmul peak per CPU-second':34}{peak_cpu / 1e9:>10.1f} GF/s")
    print(f"{'whole run per CPU-second (5·F/mb)':34}{run_flop / total_cpu / 1e9:>10.1f} GF/s  = {run_flop / total_cpu / peak_cpu:6.1%} of peak  (incl. load, state writes)")


if __name__ == "__main__":
    main()
