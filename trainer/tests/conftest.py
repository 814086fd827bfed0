"""Shared pytest fixtures: the real SmolLM2-135M-Instruct, cached once under the data dir.

Stable fixture API (used by the server and trainer tests):
- ``data_dir`` (session): VOLT_DATA_DIR or ``<repo>/.volt``; the dequantised model cache lives here.
- ``model_dir`` (session): local HF directory of the default model (built from the GGUF on first use).
- ``tokenizer`` (session): its tokenizer.
- ``model`` (function): a fresh fp32 CPU model in eval mode, so a test may mutate it (LoRA, optimiser).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from volt_trainer.model import DEFAULT_MODEL, load_model, resolve_model

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data_dir() -> str:
    return os.environ.get("VOLT_DATA_DIR") or str(REPO_ROOT / ".volt")


@pytest.fixture(scope="session")
def model_dir(data_dir: str) -> Path:
    return resolve_model(DEFAULT_MODEL, data_dir)


@pytest.fixture(scope="session")
def tokenizer(model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


@pytest.fixture
def model(model_dir: Path):
    loaded, _ = load_model(str(model_dir), device="cpu")
    return loaded
