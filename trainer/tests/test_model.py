"""Model loading: cache layout, dtype/eval mode, fast cached load, equality with the GGUF, clear errors."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from volt_trainer.model import DEFAULT_MODEL, load_model, resolve_model


def test_default_model_is_cached_as_safetensors(model_dir: Path, data_dir: str) -> None:
    assert model_dir == (Path(data_dir) / "models" / DEFAULT_MODEL).resolve()
    assert (model_dir / "model.safetensors").is_file()
    assert (model_dir / "tokenizer.json").is_file()
    assert "quantization_config" not in (model_dir / "config.json").read_text()


def test_cached_load_is_fast_fp32_eval(model_dir: Path, data_dir: str) -> None:
    start = time.perf_counter()
    model, tokenizer = load_model(DEFAULT_MODEL, data_dir, device="cpu")
    elapsed = time.perf_counter() - start
    assert elapsed < 10, f"cached load took {elapsed:.1f}s"
    assert model.dtype == torch.float32
    assert not model.training
    assert tokenizer.eos_token == "<|im_end|>"


def test_local_directory_resolves_to_itself(model_dir: Path, tmp_path: Path) -> None:
    assert resolve_model(str(model_dir), str(tmp_path)) == model_dir
    assert not (tmp_path / "models").exists()


def test_cached_weights_match_the_gguf(model, tokenizer) -> None:
    from transformers import AutoModelForCausalLM
    from volt_trainer.model import gguf_path

    gguf = gguf_path()
    reference = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reference.eval()(ids).logits)


@pytest.mark.parametrize("ref", ["", "no-such-model", "/nonexistent/dir"])
def test_unknown_reference_is_a_clear_error(ref: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="model"):
        resolve_model(ref, str(tmp_path))
