"""TRL's GRPOTrainer on the one-call arithmetic task: the reference loop bench/learning-vs-trl.ts sets beside Volt.

Same model (SmolLM2-135M-Instruct from Volt's model cache), LoRA shape, prompt (examples/arithmetic/prompt.json, as
the agent sends it), reward (the reply's last number equals the reference, the agent's rule), prompts per step, group size, temperature,
learning rate, clip range and KL (none) as the Volt run config the orchestrator writes. After every optimizer step it
evaluates greedily on both held-out sets and prints one JSON line per evaluation:

    {"event": "eval", "step": k, "eval": acc, "eval_b": acc, "train_seconds": s, "samples": n}

train_seconds counts generation and update time, not the evaluations (Volt's figure leaves its evaluations out too).

    .venv/bin/python bench/learning_trl.py --seed 1 --steps 8 [--prompts 8 --group 8 --lr 2e-4 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from peft import LoraConfig  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "trainer"))
from volt_trainer.model import load_model  # noqa: E402

PROMPT = json.loads((ROOT / "examples/arithmetic/prompt.json").read_text())


def prompt_messages(question: str) -> list[dict[str, str]]:
    """What examples/arithmetic/agent.mjs sends: the system line, the worked example, the question."""
    return [{"role": "system", "content": PROMPT["system"]}, *PROMPT["example"], {"role": "user", "content": question}]


def last_number(text: str) -> str:
    """agent.mjs's lastNumber: the reply's last number, commas dropped; empty when it has none."""
    numbers = re.findall(r"-?\d+(?:\.\d+)?", text.replace(",", ""))
    return numbers[-1] if numbers else ""


def read_tasks(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def correct(reply: str, answer: float) -> bool:
    got = last_number(reply)
    return got != "" and abs(float(got) - float(answer)) <= 1e-6


def reward(completions: list, answer: list, **_: object) -> list[float]:
    return [1.0 if correct(c[0]["content"], a) else 0.0 for c, a in zip(completions, answer)]


@torch.no_grad()
def accuracy(model, tokenizer, tasks: list[dict], max_tokens: int, batch: int = 30) -> float:
    was_training = model.training
    model.eval()
    hits = 0
    for i in range(0, len(tasks), batch):
        chunk = tasks[i : i + batch]
        texts = [
            tokenizer.apply_chat_template(
                prompt_messages(t["input"]["question"]), tokenize=False, add_generation_prompt=True
            )
            for t in chunk
        ]
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        out = model.generate(**enc, max_new_tokens=max_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        replies = tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        hits += sum(correct(r, t["reference"]["answer"]) for r, t in zip(replies, chunk))
    if was_training:
        model.train()
    return hits / len(tasks)


class HeldOut(TrainerCallback):
    """Evaluates after every step; the clock for training time stops while it does."""

    def __init__(self, tokenizer, sets: dict[str, list[dict]], max_tokens: int, samples_per_step: int):
        self.tokenizer, self.sets, self.max_tokens, self.per_step = tokenizer, sets, max_tokens, samples_per_step
        self.started = time.perf_counter()
        self.eval_seconds = 0.0

    def report(self, model, step: int) -> None:
        t0 = time.perf_counter()
        scores = {name: accuracy(model, self.tokenizer, tasks, self.max_tokens) for name, tasks in self.sets.items()}
        self.eval_seconds += time.perf_counter() - t0
        train_seconds = time.perf_counter() - self.started - self.eval_seconds
        line = {"event": "eval", "step": step, **scores, "train_seconds": round(train_seconds, 1)}
        print(json.dumps({**line, "samples": step * self.per_step}), flush=True)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.report(model, 0)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.report(model, state.global_step)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--prompts", type=int, default=8, help="prompts per step")
    p.add_argument("--group", type=int, default=8, help="completions per prompt (GRPO group)")
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--clip-low", type=float, default=0.2)
    p.add_argument("--clip-high", type=float, default=0.28)
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--lora-alpha", type=int, default=32)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--tasks", default=str(ROOT / "examples/arithmetic/tasks"))
    p.add_argument("--data-dir", default=os.environ.get("VOLT_DATA_DIR", str(ROOT / ".volt")))
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    model, tokenizer = load_model("smollm2-135m-instruct", a.data_dir)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tasks = Path(a.tasks)
    train = read_tasks(tasks / "train.jsonl")
    dataset = Dataset.from_list(
        [{"prompt": prompt_messages(t["input"]["question"]), "answer": t["reference"]["answer"]} for t in train]
    )
    held_out = {"eval": read_tasks(tasks / "eval.jsonl"), "eval_b": read_tasks(tasks / "eval-b.jsonl")}
    config = GRPOConfig(
        output_dir=str(Path(a.data_dir) / "bench" / f"trl-seed{a.seed}"),
        seed=a.seed,
        max_steps=a.steps,
        per_device_train_batch_size=a.prompts * a.group,
        gradient_accumulation_steps=1,
        num_generations=a.group,
        max_completion_length=a.max_tokens,
        temperature=a.temperature,
        learning_rate=a.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        optim="adamw_torch",
        weight_decay=0.0,
        max_grad_norm=1.0,
        beta=0.0,
        epsilon=a.clip_low,
        epsilon_high=a.clip_high,
        loss_type="dapo",  # token mean over the batch: Volt's lossAggregation "token_mean"
        scale_rewards="group",  # (r - group mean) / group std: Volt's estimator "grpo"
        num_iterations=1,
        use_cpu=True,
        bf16=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    lora = LoraConfig(
        r=a.lora_rank,
        lora_alpha=a.lora_alpha,
        lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )
    callback = HeldOut(tokenizer, held_out, a.max_tokens, a.prompts * a.group)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[callback],
    )
    trainer.train()
    return 0


if __name__ == "__main__":
    sys.exit(main())
