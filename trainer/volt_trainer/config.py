"""Trainer configuration: one frozen dataclass, filled from defaults < JSON file < command-line flags."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

Aggregation = Literal["token_mean", "rollout_mean"]
UpdatePath = Literal["fast", "reference"]  # the same update computed two ways; "reference" is the straightforward one


@dataclass(frozen=True)
class TrainConfig:
    model: str = "smollm2-135m-instruct"
    data_dir: str = field(default_factory=lambda: os.environ.get("VOLT_DATA_DIR", ".volt"))
    seed: int = 0
    epochs: int = 1
    num_minibatches: int = 1  # optimizer steps per epoch; a rollout never straddles two minibatches
    micro_batch_size: int = 4  # samples per forward/backward; gradients accumulate exactly across them
    lr: float = 5e-5
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    clip_low: float = 0.2
    clip_high: float = 0.28
    tis_cap: float = 2.0
    kl_coef: float = 0.0
    aggregation: Aggregation = "token_mean"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    threads: int = 1  # fixed CPU thread count: part of what makes a run bitwise reproducible
    max_steps: int = 0  # 0 = run to the end; >0 = stop (resumably) after this many optimizer steps in total
    update_path: UpdatePath = (
        "fast"  # "reference" stays selectable: the straightforward computation fast is tested against
    )

    def __post_init__(self) -> None:
        # Bounds of fields a run config sets are src/config/run-rules.ts's; test/config/run-rules.test.ts feeds every rule to both.
        checks = {
            "epochs": 1 <= self.epochs <= 100,
            "num_minibatches": self.num_minibatches >= 1,
            "micro_batch_size": 1 <= self.micro_batch_size <= 4096,
            "lr": 0 < self.lr < 1,
            "weight_decay": self.weight_decay >= 0,
            "max_grad_norm": self.max_grad_norm > 0,
            "clip_low": 0 < self.clip_low < 1,
            "clip_high": self.clip_high > 0,
            "tis_cap": self.tis_cap >= 1,
            "kl_coef": self.kl_coef >= 0,
            "aggregation": self.aggregation in get_args(Aggregation),
            "lora_r": 1 <= self.lora_r <= 256,
            "lora_alpha": 1 <= self.lora_alpha <= 4096,
            "lora_dropout": 0 <= self.lora_dropout < 1,
            "target_modules": len(self.target_modules) >= 1,
            "threads": self.threads >= 1,
            "max_steps": self.max_steps >= 0,
            "update_path": self.update_path in get_args(UpdatePath),
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in bad)
            raise ValueError(f"invalid trainer config: {values}")

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "target_modules": list(self.target_modules)}


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
CASTS: dict[str, Any] = {"int": int, "float": float, "str": str, "Aggregation": str, "UpdatePath": str}


def _coerce(name: str, value: Any) -> Any:
    kind = str(FIELDS[name].type)
    if name == "target_modules":
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(x, str) and x for x in items):
            raise ValueError(f"invalid trainer config: target_modules must be a list of module names, got {value!r}")
        return tuple(items)
    cast = CASTS[kind]
    # JSON true or 1.5 must not slip into an int field (flags arrive as strings and are cast below)
    if (
        isinstance(value, bool)
        or (cast is int and isinstance(value, float))
        or (cast is str and not isinstance(value, str))
    ):
        raise ValueError(f"invalid trainer config: {name} must be {kind}, got {value!r}")
    try:
        return cast(value)
    except (TypeError, ValueError):
        raise ValueError(f"invalid trainer config: {name} must be {kind}, got {value!r}") from None


def load_config(json_path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    values: dict[str, Any] = {}
    if json_path is not None:
        raw = json.loads(Path(json_path).read_text())
        if not isinstance(raw, dict):
            raise ValueError(f"invalid trainer config: {json_path} must hold a JSON object")
        values.update(raw)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"invalid trainer config: unknown field(s) {', '.join(unknown)}")
    return TrainConfig(**{name: _coerce(name, value) for name, value in values.items()})


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One --flag per config field (dashes for underscores); unset flags fall back to the JSON file, then defaults."""
    for name, f in FIELDS.items():
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            default=None,
            help=f"default {f.default!r}" if f.default is not dataclasses.MISSING else None,
        )
