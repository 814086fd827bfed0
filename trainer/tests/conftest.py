"""Shared pytest fixtures: the real SmolLM2-135M-Instruct, cached once under the data dir.

Stable fixture API (used by the server and trainer tests):
- ``data_dir`` (session): VOLT_DATA_DIR or ``<repo>/.volt``; the dequantised model cache lives here.
- ``model_dir`` (session): local HF directory of the default model (built from the GGUF on first use).
- ``tokenizer`` (session): its tokenizer.
- ``model`` (function): a fresh fp32 CPU model in eval mode, so a test may mutate it (LoRA, optimiser).
- ``server_url`` (session): base URL of a real volt-serve subprocess on loopback (started on first use).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
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


# The admin key the test server is started with; control endpoints (adapter load/unload) need it.
ADMIN_KEY = "pytest-admin-key-1234"
ADMIN_HEADERS = {"authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture(scope="session")
def server_url(model_dir: Path) -> Iterator[str]:
    """A real ``python -m volt_trainer.serve`` on a free loopback port, serving the default model."""
    command = [
        sys.executable,
        "-m",
        "volt_trainer.serve",
        "--model",
        str(model_dir),
        "--served-model-name",
        DEFAULT_MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--threads",
        "1",
        "--max-batch",
        "8",
        "--max-model-len",
        "1024",
    ]
    env = {**os.environ, "VOLT_MODEL_SERVER_ADMIN_KEY": ADMIN_KEY}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert process.stdout is not None
    deadline = time.monotonic() + 180
    lines: list[str] = []
    url = None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        match = re.search(r"volt-serve listening on (http://127\.0\.0\.1:\d+)", line)
        if match:
            url = match.group(1)
            break
    if url is None:
        process.kill()
        raise RuntimeError("volt-serve did not start:\n" + "".join(lines[-20:]))
    # Keep draining output so the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
