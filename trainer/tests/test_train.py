"""The trainer on the real SmolLM2: it learns in the advantage's direction, is bitwise reproducible, and resumes exactly."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from peft import PeftModel
from safetensors.torch import load_file
from volt_trainer.batch import pad, read_batch
from volt_trainer.config import load_config
from volt_trainer.logprobs import response_logprobs
from volt_trainer.model import load_model
from volt_trainer.train import train

# real SmolLM2 samples (sampled from the model, engine logprobs from the model), so TIS weights are realistic
FIXTURE = Path(__file__).resolve().parent / "data" / "smollm2-samples.jsonl"
TRAINER_DIR = Path(__file__).resolve().parents[1]
# 2 epochs x 2 minibatches = 4 optimizer steps; KL on, rollout_mean on: every part of the loss is exercised
FLAGS = {
    "lr": 1e-3,
    "epochs": 2,
    "num_minibatches": 2,
    "micro_batch_size": 2,
    "aggregation": "rollout_mean",
    "kl_coef": 0.01,
}


@pytest.fixture(autouse=True, scope="module")
def restore_torch_globals():
    # the trainer fixes threads and deterministic mode process-wide; give other test modules theirs back
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    yield
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, data_dir):
    out = tmp_path_factory.mktemp("full")
    done = train(str(FIXTURE), str(out), load_config(None, {**FLAGS, "data_dir": data_dir}))
    return out, done


def mean_trained_logprob(model, batch):
    with torch.no_grad():
        lp = response_logprobs(model, batch)
    return (lp * batch.loss_mask).sum(1) / batch.loss_mask.sum(1)  # [B]


def test_update_changes_lora_and_moves_logprobs_with_the_advantage(full_run, model):
    out, done = full_run
    weights = load_file(out / "adapter" / "adapter_model.safetensors")
    lora_b = [w for name, w in weights.items() if "lora_B" in name]
    assert lora_b and all(w.abs().sum() > 0 for w in lora_b)  # peft starts B at zero
    assert done["metrics"]["steps"] == 4 and done["metrics"]["kl"] > 0

    samples = read_batch(FIXTURE)
    batch = pad(samples)
    before = mean_trained_logprob(model, batch)
    after = mean_trained_logprob(PeftModel.from_pretrained(model, str(out / "adapter")).eval(), batch)
    positive = torch.tensor([s.advantage > 0 for s in samples])
    assert after[positive].mean() > before[positive].mean()
    assert after[~positive].mean() < before[~positive].mean()


def test_same_seed_gives_a_bitwise_identical_adapter(full_run, tmp_path, data_dir):
    out, done = full_run
    again = train(str(FIXTURE), str(tmp_path), load_config(None, {**FLAGS, "data_dir": data_dir}))
    assert again["adapter_sha256"] == done["adapter_sha256"]
    assert (tmp_path / "adapter" / "adapter_model.safetensors").read_bytes() == (
        out / "adapter" / "adapter_model.safetensors"
    ).read_bytes()


def cli(out: Path, data_dir: str, *extra: str) -> tuple[int, list[dict], str]:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in FLAGS.items()]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "volt_trainer.train",
            "--batch",
            str(FIXTURE),
            "--out",
            str(out),
            f"--data-dir={data_dir}",
            *flags,
            *extra,
        ],
        cwd=TRAINER_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "VOLT_DATA_DIR": data_dir},
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_cli_stopped_after_two_steps_then_resumed_equals_uninterrupted(full_run, tmp_path, data_dir):
    _, done = full_run
    rc, events, err = cli(tmp_path, data_dir, "--max-steps=2")
    assert rc == 0, err
    assert [e["event"] for e in events] == ["step", "step", "stopped"]
    step_keys = {"event", "step", "total_steps", "loss", "clip_frac", "kl", "grad_norm", "tokens", "tokens_per_s", "lr"}
    assert step_keys <= set(events[0]) and events[0]["total_steps"] == 4
    assert not (tmp_path / "adapter").exists()

    rc, events, err = cli(tmp_path, data_dir, "--resume")
    assert rc == 0, err
    assert [e["event"] for e in events] == ["step", "step", "done"] and events[0]["step"] == 3
    assert events[-1]["adapter_sha256"] == done["adapter_sha256"]
    assert events[-1]["metrics"]["resumed_from_step"] == 2 and done["metrics"]["resumed_from_step"] == 0


def test_cli_rejects_bad_config_and_resume_of_another_run(tmp_path, data_dir):
    rc, events, err = cli(tmp_path, data_dir, "--clip-low=1.5")
    assert rc == 2 and events == [] and "clip_low=1.5" in err
    rc, _, err = cli(tmp_path, data_dir, "--max-steps=1")
    assert rc == 0, err
    rc, events, err = cli(tmp_path, data_dir, "--resume", "--lr=0.5")
    assert rc == 2 and "different batch, config or adapter_in" in err


def test_a_chained_update_continues_the_previous_updates_adamw_moments(tmp_path, data_dir):
    one_step = {**FLAGS, "epochs": 1, "num_minibatches": 1, "data_dir": data_dir}
    first = train(str(FIXTURE), str(tmp_path / "first"), load_config(None, one_step))
    adapter = Path(first["adapter_dir"])
    saved = torch.load(adapter / "optimizer.pt", weights_only=True)
    assert {int(s["step"]) for s in saved["state"].values()} == {1}

    chained = train(str(FIXTURE), str(tmp_path / "chained"), load_config(None, one_step), str(adapter))
    moments = torch.load(Path(chained["adapter_dir"]) / "optimizer.pt", weights_only=True)["state"]
    assert {int(s["step"]) for s in moments.values()} == {2}  # the second step of one AdamW, not a first of a new one

    (adapter / "optimizer.pt").unlink()  # an adapter from elsewhere: AdamW starts from zeros
    fresh = train(str(FIXTURE), str(tmp_path / "fresh"), load_config(None, one_step), str(adapter))
    fresh_moments = torch.load(Path(fresh["adapter_dir"]) / "optimizer.pt", weights_only=True)["state"]
    assert {int(s["step"]) for s in fresh_moments.values()} == {1}
    assert fresh["adapter_sha256"] != chained["adapter_sha256"]
    # lora_A had zero gradient at step 1 (B starts at zero), so only the B moments carry anything over
    assert any(not torch.equal(fresh_moments[k]["exp_avg"], moments[k]["exp_avg"]) for k in moments)


def test_an_sft_batch_trains_the_plain_nll_of_its_samples(tmp_path, data_dir, model_dir, capsys):
    """objective "sft" (rejection sampling): the first step's loss is the token-mean NLL of the samples under the policy
    (no ratio, clip or importance weight), and the update raises their likelihood."""
    from safetensors import safe_open
    from safetensors.numpy import load_file as load_np
    from safetensors.numpy import save_file as save_np

    fixture = TRAINER_DIR.parent / "schemas" / "fixtures" / "samples.safetensors"
    with safe_open(str(fixture), framework="np") as f:
        metadata = f.metadata()
    tensors = load_np(fixture)
    tensors["advantage"] = tensors["advantage"] * 0 + 1  # what the rejection-sampling estimator gives every kept sample
    batch = tmp_path / "sft.safetensors"
    save_np(tensors, str(batch), metadata={**metadata, "objective": "sft"})
    cfg = {**FLAGS, "epochs": 1, "num_minibatches": 1, "kl_coef": 0.0, "aggregation": "token_mean", "lr": 1e-3}
    done = train(str(batch), str(tmp_path / "out"), load_config(None, {**cfg, "data_dir": data_dir}))
    assert done["objective"] == "sft"
    step = next(e for e in map(json.loads, capsys.readouterr().out.splitlines()) if e["event"] == "step")
    padded = pad(read_batch(batch))
    base, _ = load_model(str(model_dir), device="cpu")  # its own copy: other tests load adapters into the shared one
    with torch.no_grad():
        lp = response_logprobs(base, padded)
    nll = float(-(lp * padded.loss_mask).sum() / padded.loss_mask.sum())
    assert step["loss"] == pytest.approx(nll, rel=1e-4)
    assert step["clip_frac"] == 0

    before = mean_trained_logprob(base, padded)
    after = mean_trained_logprob(PeftModel.from_pretrained(base, str(tmp_path / "out" / "adapter")).eval(), padded)
    assert (after > before).all()

    bad = tmp_path / "bad.safetensors"
    save_np(tensors, str(bad), metadata={**metadata, "objective": "dpo"})
    with pytest.raises(ValueError, match="objective"):
        train(str(bad), str(tmp_path / "bad"), load_config(None, {**cfg, "data_dir": data_dir}))


def test_the_batch_files_loss_scale_scales_the_loss_and_gradient(tmp_path, data_dir, capsys):
    """loss_scale (batch.lossNormalizer: groups dropped for zero variance still count in the mean) scales the step."""
    from safetensors import safe_open
    from safetensors.numpy import load_file as load_np
    from safetensors.numpy import save_file as save_np

    fixture = TRAINER_DIR.parent / "schemas" / "fixtures" / "samples.safetensors"
    with safe_open(str(fixture), framework="np") as f:
        metadata = f.metadata()
    tensors = load_np(fixture)
    one_step = {**FLAGS, "epochs": 1, "num_minibatches": 1, "kl_coef": 0.0, "data_dir": data_dir}
    steps = {}
    for scale in ("1", "0.25"):
        batch = tmp_path / f"scale-{scale}.safetensors"
        save_np(tensors, str(batch), metadata={**metadata, "loss_scale": scale})
        done = train(str(batch), str(tmp_path / scale), load_config(None, one_step))
        assert done["metrics"]["loss_scale"] == float(scale)
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        steps[scale] = next(e for e in lines if e["event"] == "step")
    assert steps["0.25"]["loss"] == pytest.approx(0.25 * steps["1"]["loss"], rel=1e-5)
    assert steps["0.25"]["grad_norm"] == pytest.approx(0.25 * steps["1"]["grad_norm"], rel=1e-4)

    bad = tmp_path / "bad.safetensors"
    save_np(tensors, str(bad), metadata={**metadata, "loss_scale": "1.5"})
    with pytest.raises(ValueError, match="loss_scale"):
        train(str(bad), str(tmp_path / "bad"), load_config(None, one_step))
