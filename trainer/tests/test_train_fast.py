"""The fast update equals the reference one: shared prefixes, merged multi-turn samples and padding, to fp32 rounding.

Tolerances (fp32, CPU): logprobs 1e-4 nats absolute; gradients 1e-3 relative to the largest gradient entry;
per-step losses 1e-4 absolute and gradient norms 1e-4 relative. Saved LoRA weights: 99.5 % of them within 1e-3 of
the largest weight change, and all within 2 * lr per step (two opposite Adam moves): AdamW's first steps move a weight by
about lr * g / (|g| + eps), so a gradient entry near 1e-8, where fp32 rounding decides its sign, may move either way.
"""

from __future__ import annotations

import torch
from peft import LoraConfig, get_peft_model
from safetensors.torch import load_file
from volt_trainer.batch import Sample, pad
from volt_trainer.config import load_config
from volt_trainer.logprobs import response_logprobs
from volt_trainer.shared_prefix import micro_batches, prefix_tree, shared_prefix_logprobs
from volt_trainer.train import train

SYSTEM = (
    "<|im_start|>system\nYou solve math word problems with a calculator. Write <calc>expression</calc>.<|im_end|>\n"
)
QUESTIONS = [
    "<|im_start|>user\nWhat is 23 * 12?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nA farmer packs 261 pens into boxes of 9. How many boxes?<|im_end|>\n<|im_start|>assistant\n",
]
ANSWERS = ["<calc>23*12</calc>", "<answer>276</answer>", "I think <calc>261/9</calc>", "<answer>29</answer>"]


def demo_samples(tokenizer) -> list[Sample]:
    """Two groups of three: all share the system prompt, a group shares its question; one merged two-turn sample each."""
    samples = []
    for g, question in enumerate(QUESTIONS):
        prompt = tokenizer(SYSTEM + question, add_special_tokens=False)["input_ids"]
        for i in range(3):
            answer = tokenizer(ANSWERS[(g + i) % 4], add_special_tokens=False)["input_ids"]
            mask = [1] * len(answer)
            if i == 2:  # merged multi-turn: the tool result (not trained) then the second answer
                tool = tokenizer(
                    "<|im_end|>\n<|im_start|>user\nResult: 276<|im_end|>\n<|im_start|>assistant\n",
                    add_special_tokens=False,
                )["input_ids"]
                second = tokenizer("<answer>276</answer>", add_special_tokens=False)["input_ids"]
                answer, mask = answer + tool + second, mask + [0] * len(tool) + [1] * len(second)
            samples.append(
                Sample(
                    sample_id=f"s{g}{i}",
                    run_id="r",
                    iteration=0,
                    rollout_id=f"ro{g}{i}",
                    attempt=0,
                    task_id=f"t{g}",
                    group_id=f"g{g}",
                    span_ids=["x"],
                    prompt_ids=prompt,
                    response_ids=answer,
                    loss_mask=mask,
                    rollout_logprobs=[-1.5] * len(answer),
                    advantage=1.0 if i % 2 else -0.5,
                )
            )
    return samples


def lora_model(model):
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:  # nonzero B, so A's gradients are not all zero either
                param.copy_(torch.randn(param.shape, generator=generator) * 0.05)
    return peft_model


def test_shared_prefix_logprobs_and_gradients_equal_the_padded_batch(model, tokenizer) -> None:
    samples = demo_samples(tokenizer)
    peft_model = lora_model(model)
    params = [p for p in peft_model.parameters() if p.requires_grad]
    for chunk in ([samples[:3]], [samples]):  # one group (whole question shared), both groups (system prompt shared)
        batch = chunk[0]
        padded = pad(batch)
        weights = padded.loss_mask / padded.loss_mask.sum()
        results = []
        for fn in (
            lambda: (response_logprobs(peft_model, padded), padded.tokens),  # noqa: B023 (called in this loop)
            lambda: shared_prefix_logprobs(peft_model, batch),  # noqa: B023
        ):
            peft_model.zero_grad(set_to_none=True)
            logp, ran = fn()
            (logp * weights * padded.advantages[:, None]).sum().backward()
            results.append((logp.detach(), [p.grad.clone() for p in params], ran))
        (ref_lp, ref_grads, ref_ran), (fast_lp, fast_grads, fast_ran) = results
        # the fast path runs the LM head at trained tokens only: untrained (tool reply) and padded ones are 0
        assert torch.allclose(fast_lp, ref_lp * padded.loss_mask, atol=1e-4, rtol=0)
        assert (fast_lp[padded.loss_mask == 0] == 0).all() and (padded.loss_mask[padded.valid] == 0).any()
        scale = max(g.abs().max() for g in ref_grads)
        assert scale > 0
        assert max((a - b).abs().max() for a, b in zip(fast_grads, ref_grads)) <= 1e-3 * scale
        assert fast_ran < ref_ran  # the shared prefix really ran once


def test_prefix_tree_shares_nodes_and_keeps_each_path() -> None:
    def sample(prompt: list[int], response: list[int]) -> Sample:
        return Sample.model_construct(group_id="g", prompt_ids=prompt, response_ids=response)

    tokens, parents, paths = prefix_tree([sample([5, 6, 7], [8]), sample([5, 6, 9], [8, 8]), sample([5, 6, 7], [8])])
    assert tokens == [5, 6, 7, 8, 9, 8, 8] and parents == [-1, 0, 1, 2, 1, 4, 5]
    assert paths == [[0, 1, 2, 3], [0, 1, 4, 5, 6], [0, 1, 2, 3]]


def test_micro_batches_hold_one_group_longest_first() -> None:
    def sample(group: str, length: int) -> Sample:
        return Sample.model_construct(group_id=group, prompt_ids=[1] * length, response_ids=[2])

    samples = [sample("a", 5), sample("b", 9), sample("a", 7), sample("b", 3), sample("a", 6)]
    assert micro_batches(samples, [0, 1, 2, 3, 4], 2) == [[2, 4], [0], [1, 3]]


def _adapter(out) -> dict[str, torch.Tensor]:
    return load_file(str(out / "adapter" / "adapter_model.safetensors"))


def _run(tmp_path, name: str, batch: str, data_dir: str, **flags) -> tuple[dict, dict[str, torch.Tensor], list[dict]]:
    out = tmp_path / name
    done = train(batch, str(out), load_config(None, {"data_dir": data_dir, "lr": 1e-3, **flags}))
    history = torch.load(out / "state" / "state.pt", weights_only=False)["history"]
    return done, _adapter(out), history


def test_fast_and_reference_updates_save_the_same_adapter(tmp_path, data_dir, tokenizer) -> None:
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(s.model_dump_json() + "\n" for s in demo_samples(tokenizer)))
    try:
        # the demo's shape (one step, no KL: no old and no ref pass), then 2 epochs x 2 minibatches with KL on
        for flags in (
            {"micro_batch_size": 8},
            {"epochs": 2, "num_minibatches": 2, "micro_batch_size": 2, "kl_coef": 0.05, "aggregation": "rollout_mean"},
        ):
            ref_done, ref_w, ref_hist = _run(tmp_path, "ref", str(batch), data_dir, update_path="reference", **flags)
            fast_done, fast_w, fast_hist = _run(tmp_path, "fast", str(batch), data_dir, update_path="fast", **flags)
            again_done, _, _ = _run(tmp_path, "again", str(batch), data_dir, update_path="fast", **flags)
            assert again_done["adapter_sha256"] == fast_done["adapter_sha256"]  # same seed: bitwise identical
            assert [h["step"] for h in fast_hist] == [h["step"] for h in ref_hist]
            for a, b in zip(fast_hist, ref_hist):
                assert (
                    abs(a["loss"] - b["loss"]) <= 1e-4
                    and a["tokens"] == b["tokens"]
                    and a["decoder_tokens"] < b["decoder_tokens"]
                )
                assert abs(a["grad_norm"] - b["grad_norm"]) <= 1e-4 * b["grad_norm"]
                assert ("kl" in a) == (flags.get("kl_coef", 0) > 0)
            initial = {k: v for k, v in _adapter_init(tmp_path, str(batch), data_dir, flags).items()}
            change = max((ref_w[k] - initial[k]).abs().max() for k in ref_w)
            assert change > 0
            diff = torch.cat([(fast_w[k] - ref_w[k]).abs().flatten() for k in ref_w])
            assert (diff <= 1e-3 * change).float().mean() >= 0.995, (
                f"{(diff > 1e-3 * change).sum()} of {diff.numel()} differ"
            )
            assert diff.max() <= 1e-3 * len(ref_hist) * 2
            assert "old_ref_passes" in fast_done["profile_s"]
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _adapter_init(tmp_path, batch: str, data_dir: str, flags: dict) -> dict[str, torch.Tensor]:
    """The adapter's starting weights: a run stopped before its first step would not save them, so rebuild them."""
    from volt_trainer.train import build_policy, seed_everything

    cfg = load_config(None, {"data_dir": data_dir, "lr": 1e-3, **flags})
    seed_everything(cfg)
    model = build_policy(cfg, None, "cpu")
    out = tmp_path / "init"
    model.save_pretrained(out / "adapter")
    return _adapter(out)
