"""The fast update path SIGKILLed mid-update, then --resume: the same adapter bytes as an uninterrupted run.

Fast-path specific: the first optimizer step's old logprobs come from that step's own forward, so a resume must take
them from the saved state, never recompute them from the (already updated) policy. KL off is the demo's shape (no
old and no reference pass at all); KL on adds the reference pass.
"""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parent / "data" / "smollm2-samples.jsonl"
TRAINER_DIR = Path(__file__).resolve().parents[1]
# 2 epochs x 2 minibatches = 4 optimizer steps, so a kill can land after step 2 or 3 with state saved
FLAGS = {
    "lr": 1e-3,
    "epochs": 2,
    "num_minibatches": 2,
    "micro_batch_size": 2,
    "aggregation": "rollout_mean",
    "update_path": "fast",
}


def command(out: Path, data_dir: str, kl: float, *extra: str) -> list[str]:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in {**FLAGS, "kl_coef": kl}.items()]
    return [
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
    ]


def run(out: Path, data_dir: str, kl: float, *extra: str) -> list[dict]:
    proc = subprocess.run(
        command(out, data_dir, kl, *extra), cwd=TRAINER_DIR, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def kill_after_step(out: Path, data_dir: str, kl: float, step: int) -> list[dict]:
    """Start the update, SIGKILL it as soon as it reports `step` (it is then saving that step or running the next)."""
    proc = subprocess.Popen(
        command(out, data_dir, kl), cwd=TRAINER_DIR, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["event"] == "step" and seen[-1]["step"] == step:
            proc.send_signal(signal.SIGKILL)
            break
    rest = proc.stdout.read()
    assert proc.wait(timeout=60) == -signal.SIGKILL, f"not killed: {seen} {rest}"
    return seen


@pytest.mark.parametrize(("kl", "kill_points"), [(0.0, (2, 3)), (0.01, (2,))], ids=["kl-off", "kl-on"])
def test_sigkill_mid_update_then_resume_equals_uninterrupted(tmp_path, data_dir, kl, kill_points):
    whole = run(tmp_path / "whole", data_dir, kl)
    done = whole[-1]
    assert done["event"] == "done" and done["metrics"]["steps"] == 4
    for step in kill_points:
        out = tmp_path / f"killed-after-{step}"
        kill_after_step(out, data_dir, kl, step)
        assert not (out / "adapter").exists()
        resumed = run(out, data_dir, kl, "--resume")
        again = resumed[-1]
        assert again["event"] == "done", resumed
        # state.pt of step (step - 1) was written before step `step` began, so at least that much is resumed
        assert step - 1 <= again["metrics"]["resumed_from_step"] <= 3
        assert again["adapter_sha256"] == done["adapter_sha256"], (
            f"resumed from step {again['metrics']['resumed_from_step']}"
        )
        assert (out / "adapter" / "adapter_model.safetensors").read_bytes() == (
            tmp_path / "whole" / "adapter" / "adapter_model.safetensors"
        ).read_bytes()
        losses = [e["loss"] for e in whole if e["event"] == "step"]
        assert [e["loss"] for e in resumed if e["event"] == "step"] == losses[again["metrics"]["resumed_from_step"] :]
