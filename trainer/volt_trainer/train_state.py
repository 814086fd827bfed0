"""Resumable trainer state: LoRA weights, optimizer, RNGs, position and old logprobs, written atomically."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

STATE_FILE = "state.pt"


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().cpu().clone() for name, p in model.named_parameters() if p.requires_grad}


def rng_state() -> dict[str, Any]:
    np_state = np.random.get_state(legacy=False)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {**np_state, "state": {"key": np_state["state"]["key"].tolist(), "pos": np_state["state"]["pos"]}},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np_state = state["numpy"]
    np.random.set_state(
        {
            **np_state,
            "state": {"key": np.array(np_state["state"]["key"], dtype=np.uint32), "pos": np_state["state"]["pos"]},
        }
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_state(state_dir: Path, **fields: Any) -> None:
    """Write to a temp file then rename, so a kill mid-write leaves the previous state intact."""
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f".{STATE_FILE}.{os.getpid()}.tmp"
    torch.save(fields, tmp)
    os.replace(tmp, state_dir / STATE_FILE)


def load_state(state_dir: Path) -> dict[str, Any] | None:
    path = state_dir / STATE_FILE
    if not path.is_file():
        return None
    return torch.load(path, map_location="cpu", weights_only=False)  # our own file; holds python RNG tuples
