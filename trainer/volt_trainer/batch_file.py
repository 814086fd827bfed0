"""The batch file the pipeline writes (src/batches/batch-file.ts): samples of schemas/sample.schema.json as columns
of one safetensors file, checked with numpy a column at a time instead of number by number.

S samples, P and R prompt and response tokens in all; sample i owns the i-th run of prompt_len / response_len
tokens in the flat columns. ids_jsonl holds one JSON line per sample with its string fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from safetensors import SafetensorError, safe_open

FORMAT = {"format": "volt-batch", "version": "1"}
PER_SAMPLE = {
    "advantage": np.float64,
    "reward": np.float64,
    "iteration": np.int32,
    "attempt": np.int32,
    "prompt_len": np.int32,
    "response_len": np.int32,
    "truncated": np.bool_,
}
PER_PROMPT_TOKEN = {"prompt_ids": np.int32}
PER_RESPONSE_TOKEN = {"response_ids": np.int32, "rollout_logprobs": np.float32, "loss_mask": np.uint8}
TENSORS = {**PER_SAMPLE, **PER_PROMPT_TOKEN, **PER_RESPONSE_TOKEN, "ids_jsonl": np.uint8}

NonEmptyStr = Annotated[str, Field(min_length=1)]


class BatchError(ValueError):
    """A batch file that is not valid; the message names the file, the sample (line or index) and the field."""


class SampleIds(BaseModel):
    """One line of ids_jsonl: the sample's string fields from schemas/sample.schema.json."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: NonEmptyStr
    run_id: NonEmptyStr
    rollout_id: NonEmptyStr
    task_id: NonEmptyStr
    group_id: NonEmptyStr
    span_ids: Annotated[list[str], Field(min_length=1)]


def _load(path: Path) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    try:
        with safe_open(str(path), framework="np") as f:
            metadata, names = f.metadata() or {}, set(f.keys())
            if {k: metadata.get(k) for k in FORMAT} != FORMAT:
                raise BatchError(
                    f"{path}: __metadata__ format {metadata.get('format')}/{metadata.get('version')}, expected volt-batch/1"
                )
            missing = sorted(set(TENSORS) - names)
            if missing:
                raise BatchError(f"{path}: tensor {missing[0]} is missing")
            columns = {name: f.get_tensor(name) for name in TENSORS}
    except SafetensorError as e:
        raise BatchError(f"{path}: not a safetensors file ({e})") from None
    for name, dtype in TENSORS.items():
        if columns[name].dtype != dtype or columns[name].ndim != 1:
            raise BatchError(
                f"{path}: tensor {name}: {columns[name].dtype}{list(columns[name].shape)}, expected 1-D {np.dtype(dtype)}"
            )
    return metadata, columns


def _first_bad(path: Path, name: str, bad: np.ndarray, ends: np.ndarray | None, what: str, values: np.ndarray) -> None:
    """Raise for the first True in `bad`, naming its sample (`ends`: cumulative token counts for token columns)."""
    if bad.any():
        i = int(np.argmax(bad))
        sample = i if ends is None else int(np.searchsorted(ends, i, side="right"))
        raise BatchError(f"{path}: sample {sample}: {name}: {values[i].item()!r} {what}")


def read_loss_scale(path: str | Path) -> float:
    """The header's loss_scale: the factor on this batch's loss (src/batches/config.ts lossNormalizer); 1 when absent."""
    try:
        with safe_open(str(path), framework="np") as f:
            raw = (f.metadata() or {}).get("loss_scale")
    except SafetensorError as e:
        raise BatchError(f"{path}: not a safetensors file ({e})") from None
    if raw is None:
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        scale = float("nan")
    if not 0 < scale <= 1:
        raise BatchError(f"{path}: __metadata__.loss_scale: {raw!r} is not a number in (0, 1]")
    return scale


OBJECTIVES = ("policy_gradient", "sft")


def read_objective(path: str | Path) -> str:
    """The header's objective: policy_gradient (RL, the default) or sft (rejection sampling: plain NLL)."""
    try:
        with safe_open(str(path), framework="np") as f:
            raw = (f.metadata() or {}).get("objective", "policy_gradient")
    except SafetensorError as e:
        raise BatchError(f"{path}: not a safetensors file ({e})") from None
    if raw not in OBJECTIVES:
        raise BatchError(f"{path}: __metadata__.objective: {raw!r} is not one of {', '.join(OBJECTIVES)}")
    return raw


def read_columns(path: str | Path) -> list[dict[str, Any]]:
    """Every sample of a batch file as a dict of schema fields (lists of ints/floats), after checking all columns."""
    path = Path(path)
    metadata, c = _load(path)
    try:
        s = int(metadata.get("samples", ""))
    except ValueError:
        raise BatchError(f"{path}: __metadata__.samples: {metadata.get('samples')!r} is not a count") from None
    if s <= 0:
        raise BatchError(f"{path}: batch file holds no samples")
    for name in PER_SAMPLE:
        if len(c[name]) != s:
            raise BatchError(f"{path}: tensor {name}: {len(c[name])} values, expected {s}")
    for name in ("prompt_len", "response_len"):
        _first_bad(path, name, c[name] < 1, None, "is not a length >= 1", c[name])
    p_end, r_end = np.cumsum(c["prompt_len"], dtype=np.int64), np.cumsum(c["response_len"], dtype=np.int64)
    for names, total in ((PER_PROMPT_TOKEN, int(p_end[-1])), (PER_RESPONSE_TOKEN, int(r_end[-1]))):
        for name in names:
            if len(c[name]) != total:
                raise BatchError(f"{path}: tensor {name}: {len(c[name])} values, expected {total} (sum of the lengths)")
    _first_bad(path, "prompt_ids", c["prompt_ids"] < 0, p_end, "is not a token id >= 0", c["prompt_ids"])
    _first_bad(path, "response_ids", c["response_ids"] < 0, r_end, "is not a token id >= 0", c["response_ids"])
    _first_bad(path, "loss_mask", c["loss_mask"] > 1, r_end, "is not 0 or 1", c["loss_mask"])
    _first_bad(
        path, "rollout_logprobs", ~(c["rollout_logprobs"] <= 0), r_end, "is not a logprob <= 0", c["rollout_logprobs"]
    )
    for name in ("advantage", "reward"):
        _first_bad(path, name, ~np.isfinite(c[name]), None, "is not a finite number", c[name])
    for name in ("iteration", "attempt"):
        _first_bad(path, name, c[name] < 0, None, "is negative", c[name])

    try:
        lines = c["ids_jsonl"].tobytes().decode("utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise BatchError(f"{path}: tensor ids_jsonl: not UTF-8 ({e.reason} at byte {e.start})") from None
    if len(lines) != s + 1 or lines[-1] != "":
        raise BatchError(f"{path}: tensor ids_jsonl: {len(lines) - 1} lines, expected {s}")
    rows: list[dict[str, Any]] = []

    def split(name: str, ends: np.ndarray) -> list[np.ndarray]:
        return np.split(c[name], ends[:-1])

    prompts, responses = split("prompt_ids", p_end), split("response_ids", r_end)
    masks, logprobs = split("loss_mask", r_end), split("rollout_logprobs", r_end)
    for i in range(s):
        try:
            ids = SampleIds.model_validate_json(lines[i])
        except ValidationError as e:
            issues = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'ids'}: {err['msg']}" for err in e.errors())
            raise BatchError(f"{path}: sample {i}: ids_jsonl line {i + 1}: {issues}") from None
        rows.append(
            {
                **ids.model_dump(),
                "iteration": int(c["iteration"][i]),
                "attempt": int(c["attempt"][i]),
                "prompt_ids": prompts[i].tolist(),
                "response_ids": responses[i].tolist(),
                "loss_mask": masks[i].tolist(),
                "rollout_logprobs": logprobs[i].tolist(),
                "advantage": float(c["advantage"][i]),
                "reward": float(c["reward"][i]),
                "truncated": bool(c["truncated"][i]),
            }
        )
    return rows
