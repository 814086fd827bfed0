"""The safetensors batch file: the TS-written fixture loads with the safetensors library itself and through
read_batch; damaged columns fail with the file, the sample and the field in the message."""

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file
from volt_trainer.batch import BatchError, Sample, read_batch

FIXTURE = Path(__file__).resolve().parents[2] / "schemas" / "fixtures" / "samples.safetensors"
SMOLLM2_JSONL = Path(__file__).resolve().parent / "data" / "smollm2-samples.jsonl"
ID_FIELDS = ("sample_id", "run_id", "rollout_id", "task_id", "group_id", "span_ids")


def to_columns(samples: list[Sample]) -> dict[str, np.ndarray]:
    """The columns src/batches/batch-file.ts writes, built here from parsed samples."""

    def cat(name: str, dtype) -> np.ndarray:
        return np.concatenate([np.asarray(getattr(s, name), dtype=dtype) for s in samples])

    def per(name: str, dtype) -> np.ndarray:
        return np.asarray([getattr(s, name) for s in samples], dtype=dtype)

    ids = "".join(json.dumps({k: getattr(s, k) for k in ID_FIELDS}) + "\n" for s in samples)
    return {
        "advantage": per("advantage", np.float64),
        "reward": per("reward", np.float64),
        "iteration": per("iteration", np.int32),
        "attempt": per("attempt", np.int32),
        "prompt_len": np.asarray([len(s.prompt_ids) for s in samples], dtype=np.int32),
        "response_len": np.asarray([len(s.response_ids) for s in samples], dtype=np.int32),
        "prompt_ids": cat("prompt_ids", np.int32),
        "response_ids": cat("response_ids", np.int32),
        "rollout_logprobs": cat("rollout_logprobs", np.float32),
        "loss_mask": cat("loss_mask", np.uint8),
        "truncated": per("truncated", np.bool_),
        "ids_jsonl": np.frombuffer(ids.encode(), dtype=np.uint8),
    }


def save(tmp_path: Path, columns: dict[str, np.ndarray], **metadata: str) -> Path:
    path = tmp_path / "samples.safetensors"
    save_file(
        columns,
        str(path),
        metadata={"format": "volt-batch", "version": "1", "samples": str(len(columns["advantage"])), **metadata},
    )
    return path


def test_fixture_loads_with_the_safetensors_library():
    tensors = load_file(str(FIXTURE))
    with safe_open(str(FIXTURE), framework="np") as f:
        assert f.metadata() == {"format": "volt-batch", "version": "1", "samples": "7", "loss_scale": "1"}
    assert tensors["response_ids"].dtype == np.int32 and tensors["rollout_logprobs"].dtype == np.float32
    assert tensors["loss_mask"].dtype == np.uint8 and tensors["truncated"].dtype == np.bool_
    assert tensors["prompt_len"].sum() == len(tensors["prompt_ids"])
    assert tensors["response_len"].sum() == len(tensors["response_ids"]) == len(tensors["loss_mask"])


def test_fixture_reads_as_samples():
    samples = read_batch(FIXTURE)
    assert len(samples) == 7
    first = samples[0]
    assert (first.sample_id, first.rollout_id, first.group_id, first.span_ids) == (
        "r-0-0.a0.s0",
        "r-0-0",
        "g-0",
        ["r-0-0-a0-0", "r-0-0-a0-1"],
    )
    assert 0 in first.loss_mask and first.rollout_logprobs[first.loss_mask.index(0)] == 0.0
    assert [s.span_ids for s in samples if s.rollout_id == "r-0-2"] == [["r-0-2-a0-0", "r-0-2-a0-1"], ["r-0-2-a0-2"]]
    assert any(s.truncated for s in samples) and {s.advantage > 0 for s in samples} == {True, False}
    for s in samples:
        assert len(s.response_ids) == len(s.loss_mask) == len(s.rollout_logprobs)
        assert Sample.model_validate(s.model_dump()) == s  # what read_batch skipped validating is valid


def test_columns_of_the_jsonl_samples_read_back_as_the_same_samples(tmp_path):
    rows = read_batch(SMOLLM2_JSONL)
    back = read_batch(save(tmp_path, to_columns(rows)))
    as_f32 = [
        {**s.model_dump(), "rollout_logprobs": np.asarray(s.rollout_logprobs, dtype=np.float32).tolist()} for s in rows
    ]
    assert [s.model_dump() for s in back] == as_f32


def damage(columns: dict[str, np.ndarray], name: str, index: int, value) -> dict[str, np.ndarray]:
    changed = {**columns, name: columns[name].copy()}
    changed[name][index] = value
    return changed


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c, r3: damage(c, "loss_mask", r3, 2), "sample 3: loss_mask: 2 is not 0 or 1"),
        (
            lambda c, r3: damage(c, "rollout_logprobs", r3 + 1, 0.5),
            "sample 3: rollout_logprobs: 0.5 is not a logprob <= 0",
        ),
        (lambda c, r3: damage(c, "rollout_logprobs", r3, np.nan), "sample 3: rollout_logprobs: nan"),
        (lambda c, r3: damage(c, "response_ids", r3, -4), "sample 3: response_ids: -4 is not a token id"),
        (lambda c, r3: damage(c, "prompt_ids", 0, -1), "sample 0: prompt_ids: -1 is not a token id"),
        (lambda c, r3: damage(c, "advantage", 2, np.inf), "sample 2: advantage: inf is not a finite number"),
        (lambda c, r3: damage(c, "response_len", 1, 0), "sample 1: response_len: 0 is not a length >= 1"),
        (lambda c, r3: damage(c, "prompt_len", 1, 999), "tensor prompt_ids: 171 values, expected"),
        (lambda c, r3: {**c, "loss_mask": c["loss_mask"].astype(np.int32)}, "tensor loss_mask: int32"),
        (lambda c, r3: {k: v for k, v in c.items() if k != "reward"}, "tensor reward is missing"),
        (
            lambda c, r3: {
                **c,
                "ids_jsonl": np.frombuffer(
                    bytes(c["ids_jsonl"]).replace(b'"sample_id":"r-0-1.a0.s0"', b'"sample_id":""'), np.uint8
                ),
            },
            "sample 1: ids_jsonl line 2: sample_id: String should have at least 1 character",
        ),
    ],
)
def test_damaged_columns_name_the_sample_and_field(tmp_path, change, message):
    columns = load_file(str(FIXTURE))
    r3 = int(columns["response_len"][:3].sum())  # first response token of sample 3
    path = save(tmp_path, change(columns, r3))
    with pytest.raises(BatchError) as err:
        read_batch(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_wrong_format_count_or_file_kind(tmp_path):
    columns = load_file(str(FIXTURE))
    with pytest.raises(BatchError, match="format volt-batch/2, expected volt-batch/1"):
        read_batch(save(tmp_path, columns, version="2"))
    with pytest.raises(BatchError, match="tensor advantage: 7 values, expected 8"):
        read_batch(save(tmp_path, columns, samples="8"))
    with pytest.raises(BatchError, match="__metadata__.samples: 'many' is not a count"):
        read_batch(save(tmp_path, columns, samples="many"))
    text = tmp_path / "lines.safetensors"
    text.write_text(FIXTURE.with_suffix(".jsonl").name + "\n")
    with pytest.raises(BatchError, match="not a safetensors file"):
        read_batch(text)
