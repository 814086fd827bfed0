"""Benchmark volt-serve on the demo's rollout phase: today's path (HF batch, no cache) vs packed steps + prefix cache, side by side.

    .venv/bin/python bench/server.py                          # rollouts workload, 2 groups x 6, 2 rounds per side
    .venv/bin/python bench/server.py --groups 8 --rounds 3    # the demo's full iteration (48 rollouts)
    .venv/bin/python bench/server.py --sides hf-off,hf-on,packed-off,packed-on   # every engine x cache combination
    .venv/bin/python bench/server.py --workload decode        # decode tokens/s at concurrency 1 vs 8 (one server)
    .venv/bin/python bench/server.py --workload adapters      # 2 LoRA adapters in flight vs 1: mixed vs separate steps

The rollouts workload replays the calculator agent (examples/calculator-ts/agent.ts): its system prompt, hint and
worked example, a train-set question, up to --turns chat calls per rollout where each call extends the previous
prompt + answer with the agent's reply; groups of 6 rollouts share a question; --concurrency rollouts run at once
(the demo's run.json: 8). Each rollout is seeded, so every server produces the same tokens and does the same work.
One server per side (--sides: engine hf = the left-padded HF batch, today's path before packed steps, or packed;
cache off/on); rounds rotate the order of the sides and medians are printed, so the shared machine's load hits
all alike. Printed, not asserted: rollouts/min, where the seconds go (prefill vs decode tokens and seconds, model
forward passes, from each server's /metrics), the cache hit rate, and each side's throughput over the first side's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2 as httpx
from openai import OpenAI

ROOT = Path(__file__).resolve().parents[1]
# Mirrors examples/calculator-ts/agent.ts (SYSTEM_PROMPT, HINT, EXAMPLE, stop strings, max_tokens, temperature).
SYSTEM = "\n".join(
    [
        "You solve math word problems with a calculator.",
        "To calculate, write <calc>expression</calc>, for example <calc>23*12-45</calc>, and wait for the result.",
        "When you know the final answer, write <answer>number</answer>.",
    ]
)
HINT = "Use <calc>expression</calc> to calculate, then <answer>number</answer>."
EXAMPLE = [
    {
        "role": "user",
        "content": f"Tom has 3 bags with 5 apples each. He eats 2 apples. How many apples are left?\n{HINT}",
    },
    {"role": "assistant", "content": "<calc>3*5-2</calc>"},
    {"role": "user", "content": "Result: 13"},
    {"role": "assistant", "content": "<answer>13</answer>"},
]
METRICS = (
    "volt_serve_prefill_tokens_total",
    "volt_serve_prefill_seconds_total",
    "volt_serve_decode_tokens_total",
    "volt_serve_decode_seconds_total",
    "volt_serve_prefix_cache_queries_total",
    "volt_serve_prefix_cache_hits_total",
    "volt_serve_forward_passes_total",
)
ADMIN_KEY = "bench-admin-key"
SIDES = {"hf-off": ("hf", False), "hf-on": ("hf", True), "packed-off": ("packed", False), "packed-on": ("packed", True)}


def start_server(
    model: str, threads: int, max_batch: int, prefix_cache_mb: int, engine: str = "auto", adapter_steps: str = "mixed"
) -> tuple[subprocess.Popen, str]:
    command = [
        sys.executable,
        "-m",
        "volt_trainer.serve",
        "--model",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--engine",
        engine,
        "--threads",
        str(threads),
        "--max-batch",
        str(max_batch),
        "--prefix-cache-mb",
        str(prefix_cache_mb),
        "--adapter-steps",
        adapter_steps,
    ]
    env = {**os.environ, "VOLT_MODEL_SERVER_ADMIN_KEY": ADMIN_KEY}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert process.stdout is not None
    for line in process.stdout:
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if match:
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, match.group(1)
    raise RuntimeError("server exited before listening")


def metrics(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=60).text
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line and not line.startswith("#")}


def questions(count: int) -> list[str]:
    lines = (ROOT / "examples/calculator/tasks/train.jsonl").read_text().splitlines()
    return [json.loads(line)["input"]["question"] for line in lines[:count]]


def agent_reply(content: str) -> str | None:
    """The agent's next user message, or None when the model answered (the agent's reactTo, minus the arithmetic)."""
    if "<answer>" in content:
        return None
    calc = re.search(r"<calc>([0-9+\-*/(). ]+)", content)
    if not calc or "**" in calc.group(1):
        return "Write <calc>expression</calc> to calculate or <answer>number</answer> to answer."
    try:
        return f"Result: {eval(calc.group(1), {'__builtins__': {}})}"  # digits and operators only (regex above)
    except Exception:  # a malformed expression: the agent answers with an error line too
        return "Error: cannot evaluate"


def rollout(
    client: OpenAI, model: str, question: str, seed: int, turns: int, max_tokens: int, temperature: float
) -> int:
    messages = [{"role": "system", "content": SYSTEM}, *EXAMPLE, {"role": "user", "content": f"{question}\n{HINT}"}]
    for turn in range(turns):
        completion = client.chat.completions.create(
            model=model,
            messages=messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=["</calc>", "</answer>"],
            seed=seed * 100 + turn,
        )
        content = completion.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": content})
        reply = agent_reply(content)
        if reply is None:
            return turn + 1
        messages.append({"role": "user", "content": reply})
    return turns


def rollout_round(url: str, args: argparse.Namespace, tasks: list[str]) -> dict[str, float]:
    client = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=args.timeout)
    jobs = [(q, g * 6 + i) for g, q in enumerate(tasks) for i in range(6)]
    before, start = metrics(url), time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        calls = sum(
            pool.map(
                lambda job: rollout(client, args.model, job[0], job[1], args.turns, args.max_tokens, args.temperature),
                jobs,
            )
        )
    wall = time.perf_counter() - start
    after = metrics(url)
    delta = {k: after[k] - before[k] for k in METRICS}
    return {
        "rollouts_per_min": 60 * len(jobs) / wall,
        "wall_s": wall,
        "calls": calls,
        "prefill_tokens": delta["volt_serve_prefill_tokens_total"],
        "prefill_s": delta["volt_serve_prefill_seconds_total"],
        "decode_tokens": delta["volt_serve_decode_tokens_total"],
        "decode_s": delta["volt_serve_decode_seconds_total"],
        "prompt_tokens": delta["volt_serve_prefix_cache_queries_total"],
        "hit_tokens": delta["volt_serve_prefix_cache_hits_total"],
        "forwards": delta["volt_serve_forward_passes_total"],
    }


def bench_rollouts(args: argparse.Namespace) -> None:
    tasks = questions(args.groups)
    sides = [side.strip() for side in args.sides.split(",")]
    unknown = [side for side in sides if side not in SIDES]
    if unknown:
        raise SystemExit(f"--sides: unknown {', '.join(unknown)} (choose from {', '.join(SIDES)})")
    servers = {
        side: start_server(
            args.model, args.threads, args.max_batch, args.prefix_cache_mb if SIDES[side][1] else 0, SIDES[side][0]
        )
        for side in sides
    }
    rows: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    try:
        for _, url in servers.values():
            rollout_round(url, argparse.Namespace(**{**vars(args), "turns": 1, "max_tokens": 2}), tasks[:1])  # warm-up
        for r in range(args.rounds):
            for side in sides[r % len(sides) :] + sides[: r % len(sides)]:  # rotate who goes first
                rows[side].append(rollout_round(servers[side][1], args, tasks))
                print(
                    f"round {r + 1} {side}: {rows[side][-1]['wall_s']:.1f}s  load {os.getloadavg()[0]:.1f}", flush=True
                )
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(timeout=30)
    print(
        f"\nrollouts: {args.groups} groups x 6, up to {args.turns} calls each, concurrency {args.concurrency}, "
        f"max_tokens {args.max_tokens}, temperature {args.temperature}, {args.threads} thread(s), medians of {args.rounds} rounds"
    )
    cols = (
        "rollouts_per_min",
        "wall_s",
        "calls",
        "prompt_tokens",
        "prefill_tokens",
        "prefill_s",
        "decode_tokens",
        "decode_s",
        "forwards",
    )
    print(f"{'side':>10} " + " ".join(f"{c:>16}" for c in cols) + f" {'hit rate':>9} {'vs ' + sides[0]:>12}")
    med = {side: {c: statistics.median(row[c] for row in rows[side]) for c in (*cols, "hit_tokens")} for side in rows}
    first = med[sides[0]]["rollouts_per_min"]
    for side, m in med.items():
        hit = m["hit_tokens"] / m["prompt_tokens"] if m["prompt_tokens"] else 0.0
        print(
            f"{side:>10} "
            + " ".join(f"{m[c]:>16.1f}" for c in cols)
            + f" {hit:>9.1%} {m['rollouts_per_min'] / first:>11.2f}x"
        )
    for before, after in (("hf-off", "packed-on"), ("packed-off", "packed-on"), ("hf-off", "hf-on")):
        if before in med and after in med:
            print(
                f"rollout-phase throughput, {after} / {before}: {med[after]['rollouts_per_min'] / med[before]['rollouts_per_min']:.2f}x"
                + (" (goal >= 3x)" if before == "hf-off" and after == "packed-on" else "")
            )
    print(
        "prefill/decode seconds of a packed step that mixes both are split by token share (see server/packed_engine.py)"
    )
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def one_request(client: OpenAI, model: str, prompt: str, max_tokens: int) -> tuple[int, float]:
    """(completion tokens, seconds to the first token) for one streamed request."""
    start = time.perf_counter()
    first, tokens = None, 0
    stream = client.completions.create(
        model=model,
        prompt=prompt,
        max_tokens=max_tokens,
        temperature=0,
        stream=True,
        extra_body={"return_token_ids": True, "ignore_eos": True},
    )
    for chunk in stream:
        for choice in chunk.choices:
            ids = (choice.model_extra or {}).get("token_ids") or []
            if ids and first is None:
                first = time.perf_counter() - start
            tokens += len(ids)
    return tokens, first if first is not None else float("nan")


def bench_decode(args: argparse.Namespace) -> None:
    prompts = [
        "Write a short story about a robot who learns to paint.",
        "Explain how rain forms, step by step.",
        "List some facts about the ocean.",
        "Describe a busy market in the morning.",
    ]
    process, url = start_server(args.model, args.threads, 8, 0)
    try:
        client = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=args.timeout)
        one_request(client, args.model, "warm up", 2)
        rows = []
        for concurrency in (1, 8):
            start = time.perf_counter()
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                results = list(
                    pool.map(
                        lambda i: one_request(client, args.model, prompts[i % len(prompts)], args.max_tokens),
                        range(args.requests),
                    )
                )
            wall = time.perf_counter() - start
            rows.append((concurrency, sum(r[0] for r in results) / wall, statistics.median(r[1] for r in results)))
    finally:
        process.terminate()
        process.wait(timeout=30)
    for concurrency, tok_s, ttft in rows:
        print(f"concurrency {concurrency}: {tok_s:.1f} tok/s, TTFT p50 {ttft:.2f}s")
    print(f"throughput ratio c8/c1: {rows[1][1] / rows[0][1]:.2f}x")


def make_adapters(model: str, directory: Path, count: int) -> list[Path]:
    """`count` real LoRA adapters (rank 8 on q_proj and v_proj, the run config's default) with random nonzero B."""
    import torch
    from peft import LoraConfig, get_peft_model
    from volt_trainer.model import load_model

    base, _ = load_model(model, device="cpu")
    peft_model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    dirs = []
    for seed in range(count):
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, param in peft_model.named_parameters():
                if "lora_B" in name:
                    param.copy_(torch.randn(param.shape, generator=generator) * 0.05)
        peft_model.save_pretrained(directory / f"adapter-{seed}")
        dirs.append(directory / f"adapter-{seed}")
    return dirs


def adapters_round(url: str, args: argparse.Namespace, names: list[str]) -> float:
    """Aggregate completion tokens/s of args.requests requests at args.concurrency, the i-th on names[i % len]."""
    client = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=args.timeout)
    prompts = [f"Write a short story about a robot who learns to paint, part {i}." for i in range(args.requests)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        results = list(
            pool.map(
                lambda i: one_request(client, names[i % len(names)], prompts[i], args.max_tokens), range(args.requests)
            )
        )
    return sum(r[0] for r in results) / (time.perf_counter() - start)


def bench_adapters(args: argparse.Namespace) -> None:
    """Two adapters in flight vs one at the same concurrency, on a server that mixes them in one forward and one
    that runs a forward per adapter (--adapter-steps mixed / separate), rounds interleaved, medians printed."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        dirs = make_adapters(args.model, Path(tmp), 2)
        servers = {
            steps: start_server(args.model, args.threads, args.max_batch, 0, "packed", steps)
            for steps in ("separate", "mixed")
        }
        loads = {"one adapter": ["a0"], "two adapters": ["a0", "a1"]}
        rows: dict[tuple[str, str], list[float]] = {(s, w): [] for s in servers for w in loads}
        try:
            for _, url in servers.values():
                for i, d in enumerate(dirs):
                    loaded = httpx.post(
                        f"{url}/v1/load_lora_adapter",
                        json={"lora_name": f"a{i}", "lora_path": str(d)},
                        headers={"authorization": f"Bearer {ADMIN_KEY}"},
                        timeout=120,
                    )
                    loaded.raise_for_status()
                adapters_round(url, argparse.Namespace(**{**vars(args), "requests": 2, "max_tokens": 2}), ["a0", "a1"])
            keys = list(rows)
            for r in range(args.rounds):
                for key in keys[r % len(keys) :] + keys[: r % len(keys)]:  # rotate who goes first
                    rows[key].append(adapters_round(servers[key[0]][1], args, loads[key[1]]))
                    print(f"round {r + 1} {key[0]:>8} {key[1]}: {rows[key][-1]:.1f} tok/s", flush=True)
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(timeout=30)
    med = {key: statistics.median(v) for key, v in rows.items()}
    print(
        f"\nadapters: {args.requests} requests of {args.max_tokens} tokens at concurrency {args.concurrency}, "
        f"{args.threads} thread(s), medians of {args.rounds} rounds (aggregate completion tokens/s)"
    )
    print(f"{'steps':>9} {'one adapter':>12} {'two adapters':>13} {'two / one':>10}")
    for steps in servers:
        one, two = med[(steps, "one adapter")], med[(steps, "two adapters")]
        print(f"{steps:>9} {one:>12.1f} {two:>13.1f} {two / one:>9.2f}x")
    print(f"two adapters, mixed / separate: {med[('mixed', 'two adapters')] / med[('separate', 'two adapters')]:.2f}x")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("rollouts", "decode", "adapters"), default="rollouts")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--groups", type=int, default=2, help="tasks; each is a group of 6 rollouts (the demo: 8)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per side, interleaved")
    parser.add_argument("--concurrency", type=int, default=8, help="rollouts at once (run.json rollouts.concurrency)")
    parser.add_argument("--turns", type=int, default=4, help="most calls per rollout (agent.ts AGENT_MAX_TURNS)")
    parser.add_argument("--max-tokens", type=int, default=64, help="per call (agent.ts AGENT_MAX_TOKENS)")
    parser.add_argument("--temperature", type=float, default=0.6, help="run.json AGENT_TEMPERATURE")
    parser.add_argument("--requests", type=int, default=8, help="decode workload: requests per concurrency level")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each started server")
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--prefix-cache-mb", type=int, default=512, help="cache size of the 'on' servers")
    parser.add_argument(
        "--sides",
        default="hf-off,packed-off,packed-on",
        help=f"servers to compare, the first is the baseline ({', '.join(SIDES)}; hf-off = today's path)",
    )
    parser.add_argument("--timeout", type=float, default=600, help="per-request timeout, seconds")
    args = parser.parse_args()
    {"rollouts": bench_rollouts, "decode": bench_decode, "adapters": bench_adapters}[args.workload](args)


if __name__ == "__main__":
    main()
