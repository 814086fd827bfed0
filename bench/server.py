"""Benchmark volt-serve: aggregate decode tokens/s at concurrency 1 vs 8, and time-to-first-token p50.

    .venv/bin/python bench/server.py                 # starts its own server on loopback
    .venv/bin/python bench/server.py --url http://127.0.0.1:8500 --requests 16 --max-tokens 32

Printed, not asserted. Every request streams a greedy /v1/completions with return_token_ids and
ignore_eos (as vLLM benchmarks do), so every request decodes exactly --max-tokens tokens. The run is
bounded by --requests and --timeout.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI

PROMPTS = ["Write a short story about a robot who learns to paint.", "Explain how rain forms, step by step.",
           "List some facts about the ocean.", "Describe a busy market in the morning.", "Tell me about the history of bread.",
           "What makes a good friend?", "Describe the planets of the solar system.", "How does a bicycle work?"]


def start_server(model: str, threads: int, max_batch: int) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "volt_trainer.serve", "--model", model, "--host", "127.0.0.1", "--port", "0",
               "--threads", str(threads), "--max-batch", str(max_batch)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if match:
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, match.group(1)
    raise RuntimeError("server exited before listening")


def one_request(client: OpenAI, model: str, prompt: str, max_tokens: int) -> tuple[int, float]:
    """(completion tokens, seconds to the first token) for one streamed request."""
    start = time.perf_counter()
    first, tokens = None, 0
    stream = client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0, stream=True, extra_body={"return_token_ids": True, "ignore_eos": True})
    for chunk in stream:
        for choice in chunk.choices:
            ids = (choice.model_extra or {}).get("token_ids") or []
            if ids and first is None:
                first = time.perf_counter() - start
            tokens += len(ids)
    return tokens, first if first is not None else float("nan")


def run_level(client: OpenAI, model: str, concurrency: int, requests: int, max_tokens: int) -> dict:
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(requests)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda p: one_request(client, model, p, max_tokens), prompts))
    wall = time.perf_counter() - start
    tokens = sum(r[0] for r in results)
    return {"concurrency": concurrency, "requests": requests, "tokens": tokens, "wall_s": wall,
            "tok_s": tokens / wall, "ttft_p50_s": statistics.median(r[1] for r in results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="an already running server (default: start one)")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--requests", type=int, default=8, help="requests per concurrency level (at most 64)")
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the started server")
    parser.add_argument("--timeout", type=float, default=600, help="per-request timeout, seconds")
    args = parser.parse_args()
    requests = max(1, min(args.requests, 64))
    process = None
    url = args.url
    if url is None:
        process, url = start_server(args.model, args.threads, max_batch=8)
    try:
        client = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=args.timeout)
        one_request(client, args.model, "warm up", 2)
        rows = [run_level(client, args.model, c, requests, args.max_tokens) for c in (1, 8)]
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
    print(f"{'concurrency':>11} {'requests':>8} {'tokens':>6} {'wall s':>7} {'tok/s':>7} {'TTFT p50 s':>10}")
    for row in rows:
        print(f"{row['concurrency']:>11} {row['requests']:>8} {row['tokens']:>6} {row['wall_s']:>7.1f} {row['tok_s']:>7.1f} {row['ttft_p50_s']:>10.2f}")
    print(f"throughput ratio c8/c1: {rows[1]['tok_s'] / rows[0]['tok_s']:.2f}x (goal >= 3x)")


if __name__ == "__main__":
    main()
