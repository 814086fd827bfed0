"""The server's defaults: it serves the model's whole context unless told less."""

from __future__ import annotations

import pytest
from volt_trainer.serve import ServeConfig, model_context, parse_args


def test_default_context_is_the_models_own(model) -> None:
    assert parse_args([]).max_model_len is None
    assert model_context(model) == 8192  # SmolLM2-135M-Instruct
    assert parse_args(["--max-model-len", "1024"]).max_model_len == 1024


def test_context_below_two_is_refused() -> None:
    with pytest.raises(ValueError, match="max_model_len"):
        ServeConfig(max_model_len=1)
