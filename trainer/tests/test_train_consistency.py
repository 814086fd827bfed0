"""Train/inference consistency: the trainer's logprobs for served tokens under a trained adapter match the server's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest
import torch
from conftest import ADMIN_HEADERS
from openai import OpenAI
from peft import PeftModel
from volt_trainer.batch import Sample, pad
from volt_trainer.logprobs import response_logprobs

DATA = Path(__file__).resolve().parent / "data" / "smollm2-samples.jsonl"
TRAINER_DIR = Path(__file__).resolve().parents[1]
# The server decodes incrementally with a KV cache, the trainer runs one padded forward pass; both fp32 on CPU,
# so they differ only by summation order. TIS absorbs the rest; 1e-3 nats is far below a 2x importance weight.
LOGPROB_TOLERANCE = 1e-3
ADAPTER_NAME = "h4-consistency"


@pytest.fixture(scope="module")
def trained_adapter(tmp_path_factory, data_dir) -> Path:
    out = tmp_path_factory.mktemp("consistency")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "volt_trainer.train",
            "--batch",
            str(DATA),
            "--out",
            str(out),
            "--lr=1e-3",
            "--num-minibatches=2",
            f"--data-dir={data_dir}",
        ],
        cwd=TRAINER_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "VOLT_DATA_DIR": data_dir},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["event"] == "done"
    return out / "adapter"


@pytest.fixture(scope="module")
def served_adapter(server_url: str, trained_adapter: Path):
    loaded = httpx.post(
        f"{server_url}/v1/load_lora_adapter",
        json={"lora_name": ADAPTER_NAME, "lora_path": str(trained_adapter)},
        headers=ADMIN_HEADERS,
        timeout=120,
    )
    assert loaded.status_code == 200, loaded.text
    yield OpenAI(base_url=f"{server_url}/v1", api_key="unused", max_retries=0, timeout=120)
    httpx.post(
        f"{server_url}/v1/unload_lora_adapter", json={"lora_name": ADAPTER_NAME}, headers=ADMIN_HEADERS, timeout=60
    )


def test_trainer_logprobs_match_served_logprobs_under_the_trained_adapter(served_adapter, trained_adapter, model):
    body = served_adapter.chat.completions.create(
        model=ADAPTER_NAME,
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=12,
        temperature=1.0,
        seed=7,
        logprobs=True,
        extra_body={"return_token_ids": True},
    ).to_dict()
    assert body["system_fingerprint"].startswith(f"{ADAPTER_NAME}@")
    choice = body["choices"][0]
    served = torch.tensor([entry["logprob"] for entry in choice["logprobs"]["content"]])
    sample = Sample(
        sample_id="s",
        run_id="run",
        iteration=0,
        rollout_id="r",
        attempt=0,
        task_id="t",
        group_id="g",
        span_ids=["span"],
        prompt_ids=body["prompt_token_ids"],
        response_ids=choice["token_ids"],
        loss_mask=[1] * len(choice["token_ids"]),
        rollout_logprobs=served.clamp(max=0).tolist(),
        advantage=0.0,
    )
    policy = PeftModel.from_pretrained(model, str(trained_adapter)).eval()
    with torch.no_grad():
        trainer = response_logprobs(policy, pad([sample]))[0]
        with policy.disable_adapter():
            base = response_logprobs(policy, pad([sample]))[0]
    # the adapter must matter, or this test could not tell a served base model from the trained policy
    assert (trainer - base).abs().max() > 10 * LOGPROB_TOLERANCE
    assert torch.allclose(trainer, served, atol=LOGPROB_TOLERANCE), (served.tolist(), trainer.tolist())
    print(f"max |trainer - served| = {(trainer - served).abs().max():.2e} nats over {len(served)} tokens")
