"""The shared sample fixture parses and pads; malformed JSON Lines batches fail with file, line and field in the message."""

import json
from pathlib import Path

import pytest
import torch
from volt_trainer.batch import BatchError, pad, read_batch, split_minibatches

FIXTURE = Path(__file__).resolve().parents[2] / "schemas" / "fixtures" / "samples.safetensors"


def good_line() -> dict:
    return read_batch(FIXTURE)[0].model_dump()


def write(tmp_path: Path, *lines: dict | str) -> Path:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_fixture_parses_and_validates():
    samples = read_batch(FIXTURE)
    assert len(samples) >= 2
    for s in samples:
        assert len(s.response_ids) == len(s.loss_mask) == len(s.rollout_logprobs)
    assert {s.advantage > 0 for s in samples} == {True, False}


def test_padding_puts_response_positions_right_after_the_prompt():
    samples = read_batch(FIXTURE)
    batch = pad(samples)
    for i, s in enumerate(samples):
        p, r = len(s.prompt_ids), len(s.response_ids)
        assert batch.attention_mask[i].sum().item() == p + r
        assert batch.input_ids[i, batch.positions[i, :r] + 1].tolist() == s.response_ids
        assert batch.valid[i].sum().item() == r
        assert batch.loss_mask[i, r:].sum().item() == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"loss_mask": [1]}, "loss_mask: length 1 != response_ids length"),
        ({"rollout_logprobs": [0.0]}, "rollout_logprobs: length 1 != response_ids length"),
        ({"response_ids": "abc"}, "response_ids"),
        ({"prompt_ids": [1, -2]}, "prompt_ids.1"),
        ({"advantage": "high"}, "advantage"),
        ({"iteration": True}, "iteration"),
        ({"rollout_logprobs_extra": 1}, "rollout_logprobs_extra"),
        ({"loss_mask": None}, "loss_mask"),
    ],
)
def test_malformed_line_names_line_and_field(tmp_path, change, field):
    bad = {**good_line(), **change}
    path = write(tmp_path, good_line(), bad)
    with pytest.raises(BatchError) as err:
        read_batch(path)
    assert f"{path}:2: " in str(err.value)
    assert field in str(err.value)


def test_missing_field_and_broken_json(tmp_path):
    line = good_line()
    del line["advantage"]
    with pytest.raises(BatchError, match=r":1: advantage: Field required"):
        read_batch(write(tmp_path, line))
    with pytest.raises(BatchError, match=r":1: .*[Ii]nvalid JSON"):
        read_batch(write(tmp_path, "{not json"))
    with pytest.raises(BatchError, match="no samples"):
        read_batch(write(tmp_path, ""))


def test_minibatches_keep_rollouts_whole_and_cover_every_sample():
    samples = read_batch(FIXTURE)
    parts = split_minibatches(samples, 2, torch.Generator().manual_seed(0))
    assert sorted(i for p in parts for i in p) == list(range(len(samples)))
    owner = {samples[i].rollout_id: k for k, p in enumerate(parts) for i in p}
    assert all(owner[samples[i].rollout_id] == k for k, p in enumerate(parts) for i in p)
