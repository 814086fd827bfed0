"""LoRA adapters over HTTP: load changes the output and the fingerprint, in-place swaps version, unload 404s."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2 as httpx
import pytest
import torch
from conftest import ADMIN_HEADERS
from peft import LoraConfig, get_peft_model
from volt_trainer.model import DEFAULT_MODEL

PROMPT = {
    "messages": [{"role": "user", "content": "What is 2 + 2?"}],
    "max_tokens": 6,
    "temperature": 0,
    "return_token_ids": True,
}


def _make_adapters(model, directories: list[Path]) -> list[str]:
    """Save tiny random LoRAs whose B is nonzero (a fresh LoRA has B = 0 and would change nothing)."""
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    hashes = []
    for seed, directory in enumerate(directories):
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, param in peft_model.named_parameters():
                if "lora_B" in name:
                    param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
        peft_model.save_pretrained(directory)
        hashes.append(hashlib.sha256((directory / "adapter_model.safetensors").read_bytes()).hexdigest()[:12])
    return hashes


@pytest.fixture(scope="module")
def http(server_url: str):
    with httpx.Client(base_url=server_url, timeout=300, headers=ADMIN_HEADERS) as client:
        yield client


def _chat(http: httpx.Client, model: str) -> httpx.Response:
    return http.post("/v1/chat/completions", json={"model": model, **PROMPT})


def test_adapter_load_swap_unload(http: httpx.Client, model, tmp_path: Path) -> None:
    first_hash, second_hash = _make_adapters(model, [tmp_path / "v1", tmp_path / "v2"])
    base = _chat(http, DEFAULT_MODEL).json()

    loaded = http.post("/v1/load_lora_adapter", json={"lora_name": "policy", "lora_path": str(tmp_path / "v1")})
    assert loaded.status_code == 200, loaded.text
    served = _chat(http, "policy").json()
    assert served["model"] == "policy"
    assert served["system_fingerprint"] == f"policy@{first_hash}"
    assert served["choices"][0]["token_ids"] != base["choices"][0]["token_ids"]
    assert _chat(http, DEFAULT_MODEL).json()["choices"][0]["token_ids"] == base["choices"][0]["token_ids"]
    assert "policy" in [m["id"] for m in http.get("/v1/models").json()["data"]]
    # Base and adapter requests in flight together are decoded in separate per-adapter batches.
    with ThreadPoolExecutor(max_workers=4) as pool:
        mixed = list(
            pool.map(lambda name: _chat(http, name).json()["choices"][0]["token_ids"], [DEFAULT_MODEL, "policy"] * 2)
        )
    assert mixed == [base["choices"][0]["token_ids"], served["choices"][0]["token_ids"]] * 2

    again = http.post("/v1/load_lora_adapter", json={"lora_name": "policy", "lora_path": str(tmp_path / "v1")})
    assert again.status_code == 400 and again.json()["error"]["param"] == "lora_name"

    # An in-place swap while a request runs: that request finishes on the version it started with.
    stream_body = {"model": "policy", **PROMPT, "max_tokens": 12, "stream": True}
    with http.stream("POST", "/v1/chat/completions", json=stream_body) as streaming:
        lines = streaming.iter_lines()
        first = json.loads(next(line for line in lines if line.startswith("data: "))[6:])
        swapped = http.post(
            "/v1/load_lora_adapter",
            json={"lora_name": "policy", "lora_path": str(tmp_path / "v2"), "load_inplace": True},
        )
        chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    assert swapped.status_code == 200, swapped.text
    streamed_ids = [i for c in chunks for i in c["choices"][0].get("token_ids", [])]
    assert streamed_ids[:6] == served["choices"][0]["token_ids"]
    assert {c["system_fingerprint"] for c in [first, *chunks]} == {f"policy@{first_hash}"}
    assert second_hash != first_hash
    assert _chat(http, "policy").json()["system_fingerprint"] == f"policy@{second_hash}"

    assert http.post("/v1/unload_lora_adapter", json={"lora_name": "policy"}).status_code == 200
    gone = _chat(http, "policy")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "model_not_found"
    assert _chat(http, DEFAULT_MODEL).json()["choices"][0]["token_ids"] == base["choices"][0]["token_ids"]


def test_bad_adapter_requests_are_clear_errors(http: httpx.Client, tmp_path: Path) -> None:
    missing = http.post("/v1/load_lora_adapter", json={"lora_name": "x", "lora_path": str(tmp_path / "nothing")})
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "lora_path"
    unknown = http.post("/v1/unload_lora_adapter", json={"lora_name": "never-loaded"})
    assert unknown.status_code == 404 and unknown.json()["error"]["param"] == "lora_name"
    assert http.get("/health").json()["status"] == "ok"


def _answer(http: httpx.Client, model: str) -> tuple[list[int], list[float]]:
    body = {"model": model, **PROMPT, "max_tokens": 12, "logprobs": True, "ignore_eos": True}
    choice = http.post("/v1/chat/completions", json=body).json()["choices"][0]
    return choice["token_ids"], [t["logprob"] for t in choice["logprobs"]["content"]]


def _mixed_passes(http: httpx.Client) -> float:
    lines = http.get("/metrics").text.splitlines()
    return float(next(line.split()[1] for line in lines if line.startswith("volt_serve_mixed_adapter_passes_total ")))


def test_two_adapters_in_flight_together_each_get_their_own_logprobs(http: httpx.Client, model, tmp_path: Path) -> None:
    _make_adapters(model, [tmp_path / "solver", tmp_path / "checker"])
    for name in ("solver", "checker"):
        loaded = http.post("/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(tmp_path / name)})
        assert loaded.status_code == 200, loaded.text
    try:
        names = [DEFAULT_MODEL, "solver", "checker"]
        alone = {name: _answer(http, name) for name in names}
        assert len({tuple(ids) for ids, _ in alone.values()}) == 3  # three different policies
        before = _mixed_passes(http)
        with ThreadPoolExecutor(max_workers=6) as pool:
            together = list(pool.map(lambda name: _answer(http, name), names * 2))
        # The requests did share forward passes across adapters, and each still got its own adapter's answer.
        assert _mixed_passes(http) > before
        for name, (ids, logprobs) in zip(names * 2, together):
            assert ids == alone[name][0], name
            assert max(abs(a - b) for a, b in zip(logprobs, alone[name][1])) <= 1e-3, name
    finally:
        for name in ("solver", "checker"):
            http.post("/v1/unload_lora_adapter", json={"lora_name": name})
