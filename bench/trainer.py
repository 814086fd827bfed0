"""Trainer throughput on a demo-shaped batch: update_path reference (before) vs fast (after), side by side in one run.

    .venv/bin/python bench/trainer.py [--groups 8 --rounds 2 --threads 1 --micro 8]

The batch has the calculator demo's shape (examples/calculator/run.json, bench/server.py's rollouts): --groups
groups of 6 samples; every sample starts with the same --system tokens (system prompt + worked example), a group
shares its --question tokens, and each sample is one merged multi-turn response of --response-min..--response-max
tokens whose middle third (the agent's tool reply) is masked out. One optimizer step (minibatch = whole batch,
epochs 1, KL off), as the demo runs. Rounds alternate between the two paths; medians are printed with the load.

Printed: per-phase seconds (load = batch read + model build, old/ref passes, forward, backward, optimizer, save),
trained tokens/s (non-pad tokens of all samples, what the trainer's step record reports), and useful FLOP/s against
the measured fp32 matmul peak (same run, same threads). Useful FLOP counts each shared token once:
    forward F = 2·(N_dec + LoRA)·T_unique + 2·H·V·T_trained + 2·n·H·Σ L_i²   (decoder on the tokens of the batch's
    prefix tree, LM head at trained response tokens, causal attention); a step = 3·F (backward ≈ 2× forward).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
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

PHASES = ("load", "old_ref_passes", "forward", "backward", "optimizer", "save")


def matmul_peak(n: int, repeats: int) -> float:
    """Median fp32 torch.matmul FLOP per wall second."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.matmul(a, b)  # warm-up: thread pool and caches
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.matmul(a, b)
        rates.append(2 * n**3 / (time.perf_counter() - t0))
    return statistics.median(rates)


def demo_batch(args: argparse.Namespace, vocab: int) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    ids = lambda n: torch.randint(0, vocab, (n,), generator=g).tolist()  # noqa: E731
    system = ids(args.system)
    samples = []
    for group in range(args.groups):
        prompt = system + ids(args.question)
        for i in range(6):
            r = int(torch.randint(args.response_min, args.response_max + 1, (1,), generator=g))
            mask = [0 if r // 3 <= t < 2 * r // 3 else 1 for t in range(r)]
            samples.append(
                {
                    "sample_id": f"s{group}-{i}",
                    "run_id": "bench",
                    "iteration": 0,
                    "rollout_id": f"r{group}-{i}",
                    "attempt": 0,
                    "task_id": f"t{group}",
                    "group_id": f"g{group}",
                    "span_ids": [f"span{group}-{i}"],
                    "prompt_ids": prompt,
                    "response_ids": ids(r),
                    "loss_mask": mask,
                    "rollout_logprobs": [-2.0] * r,
                    "advantage": 1.0 if i % 2 else -1.0,
                }
            )
    return samples


def unique_tokens(samples: list[dict]) -> int:
    """Nodes of the prefix tree of all token sequences: each shared token counted once."""
    root: dict = {}
    count = 0
    for s in samples:
        node = root
        for token in s["prompt_ids"] + s["response_ids"]:
            if token not in node:
                node[token] = {}
                count += 1
            node = node[token]
    return count


def run_once(batch: Path, cfg) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        captured = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(captured):
            train(str(batch), tmp, cfg)
        total = time.perf_counter() - t0
    events = [json.loads(line) for line in captured.getvalue().splitlines()]
    done = next(e for e in events if e["event"] == "done")
    steps = [e for e in events if e["event"] == "step"]
    return {
        "total": total,
        "step": sum(e["tokens"] / e["tokens_per_s"] for e in steps),
        **{p: done["profile_s"].get(p, 0.0) for p in PHASES},
        "decoder_tokens": sum(e["decoder_tokens"] for e in steps),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=8, help="groups of 6 samples (the demo: 8 tasks x 6)")
    ap.add_argument(
        "--system", type=int, default=170, help="tokens every sample shares (system prompt + worked example)"
    )
    ap.add_argument("--question", type=int, default=30, help="tokens a group shares after them")
    ap.add_argument("--response-min", type=int, default=16)
    ap.add_argument("--response-max", type=int, default=128)
    ap.add_argument("--micro", type=int, default=8, help="micro-batch size (run.json trainer.microBatchSize)")
    ap.add_argument("--rounds", type=int, default=2, help="runs per path, interleaved")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--matmul-n", type=int, default=1024)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    base, _ = load_model("smollm2-135m-instruct", None, device="cpu")
    c = base.config
    h, vocab, layers = c.hidden_size, c.vocab_size, c.num_hidden_layers
    kv = c.num_key_value_heads * (getattr(c, "head_dim", None) or h // c.num_attention_heads)
    n_dec = sum(p.numel() for p in base.get_decoder().layers.parameters())
    del base

    samples = demo_batch(args, vocab)
    tokens = sum(len(s["prompt_ids"]) + len(s["response_ids"]) for s in samples)
    t_resp = sum(len(s["response_ids"]) for s in samples)
    t_trained = sum(sum(s["loss_mask"]) for s in samples)  # the loss needs the LM head only at these
    t_unique = unique_tokens(samples)
    paths = ("reference", "fast")
    rows: dict[str, list[dict]] = {p: [] for p in paths}
    peaks = [matmul_peak(args.matmul_n, 5)]
    with tempfile.TemporaryDirectory() as tmp:
        batch = Path(tmp) / "samples.jsonl"
        batch.write_text("".join(json.dumps(s) + "\n" for s in samples))
        for r in range(args.rounds):
            for path in paths if r % 2 == 0 else reversed(paths):
                cfg = load_config(
                    None,
                    {
                        "epochs": 1,
                        "num_minibatches": 1,
                        "micro_batch_size": args.micro,
                        "threads": args.threads,
                        "lr": 2e-4,
                        "update_path": path,
                    },
                )
                rows[path].append(run_once(batch, cfg))
                print(
                    f"round {r + 1} {path}: {rows[path][-1]['total']:.1f}s  load {os.getloadavg()[0]:.1f}", flush=True
                )
                peaks.append(matmul_peak(args.matmul_n, 5))
    peak = statistics.median(peaks)
    lora = layers * 16 * (2 * h + 2 * (h + kv))  # r=16 on q, k, v, o: A in×r + B r×out
    attention = 2 * layers * h * sum((len(s["prompt_ids"]) + len(s["response_ids"])) ** 2 for s in samples)
    useful = 3 * (2 * (n_dec + lora) * t_unique + 2 * h * vocab * t_trained + attention)
    med = {p: {k: statistics.median(row[k] for row in rows[p]) for k in rows[p][0]} for p in paths}

    print(
        f"\nbatch: {args.groups} groups x 6 = {len(samples)} samples, {tokens} tokens ({t_unique} unique in the prefix tree, "
        f"{t_resp} response, {t_trained} trained), micro-batch {args.micro}, threads {args.threads}, medians of {args.rounds} rounds"
    )
    print(f"{'phase (s)':<30}" + "".join(f"{p:>12}" for p in paths))
    for phase in (*PHASES, "step", "total"):
        print(f"{phase:<30}" + "".join(f"{med[p][phase]:>12.2f}" for p in paths))
    print(f"{'decoder tokens run':<30}" + "".join(f"{med[p]['decoder_tokens']:>12.0f}" for p in paths))
    print(f"{'trained tokens/s, whole update':<30}" + "".join(f"{tokens / med[p]['total']:>12.0f}" for p in paths))
    print(f"{'trained tokens/s, update step':<30}" + "".join(f"{tokens / med[p]['step']:>12.0f}" for p in paths))
    print(f"{'useful GFLOP/s, whole update':<30}" + "".join(f"{useful / med[p]['total'] / 1e9:>12.1f}" for p in paths))
    print(f"{'  = of matmul peak':<30}" + "".join(f"{useful / med[p]['total'] / peak:>12.1%}" for p in paths))
    print(
        f"matmul peak fp32 (median of {len(peaks)}): {peak / 1e9:.1f} GFLOP/s; useful work per update {useful / 1e9:.0f} GFLOP"
    )
    print(
        f"fast / reference, whole update: {med['reference']['total'] / med['fast']['total']:.2f}x; "
        f"update step: {med['reference']['step'] / med['fast']['step']:.2f}x (goal >= 4x)"
    )
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
