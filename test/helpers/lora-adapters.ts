import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { putDirContentAddressed } from '../../src/storage/dirs.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { keys } from '../../src/storage/keys.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

// Real peft LoRA adapters on the real SmolLM2-135M; B is random (a fresh LoRA has B = 0 and would change nothing).
const SCRIPT = `
import sys, torch
from peft import LoraConfig, get_peft_model
from volt_trainer.model import load_model
model, _ = load_model(data_dir=sys.argv[1], device="cpu")
peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
for seed, directory in enumerate(sys.argv[2:]):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    peft_model.save_pretrained(directory)
`;

/** `count` distinct real LoRA adapters under `dir`, uploaded as content-addressed checkpoints; their policy refs. */
export async function makeCheckpoints(store: ObjectStore, dir: string, count: number): Promise<PolicyRef[]> {
  const dirs = Array.from({ length: count }, (_, i) => path.join(dir, `adapter-${i}`));
  const cache = process.env.VOLT_MODEL_CACHE_DIR ?? process.env.VOLT_DATA_DIR ?? path.join(root, '.volt');
  await run(path.join(root, '.venv/bin/python'), ['-c', SCRIPT, cache, ...dirs], {
    cwd: root,
    env: { ...process.env, PYTHONPATH: path.join(root, 'trainer'), HF_HUB_OFFLINE: '1' },
    timeout: 300_000,
  });
  const refs: PolicyRef[] = [];
  for (const [i, d] of dirs.entries()) {
    const { sha256 } = await putDirContentAddressed(store, d);
    refs.push({ name: `adapter-${i}`, checkpointKey: keys.checkpoint(sha256), sha256, iteration: i });
  }
  return refs;
}

// A teacher with a habit the base model lacks: a LoRA fitted (loss on the answer tokens only) to answer `answer` to
// any question, through the same chat template the model server applies.
const MARKER_SCRIPT = `
import json, sys, torch
from peft import LoraConfig, get_peft_model
from volt_trainer.model import load_model
data_dir, out, answer, questions = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
torch.manual_seed(0)
model, tok = load_model(data_dir=data_dir, device="cpu")
peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
completion = tok(answer + tok.eos_token, add_special_tokens=False)["input_ids"]
rows = []
for q in questions:
    prompt = tok.apply_chat_template([{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True)
    rows.append(tok(prompt, add_special_tokens=False)["input_ids"])
optimizer = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=3e-3)
peft_model.train()
for _ in range(12):
    optimizer.zero_grad()
    for prompt in rows:
        ids = torch.tensor([prompt + completion])
        labels = torch.tensor([[-100] * len(prompt) + completion])
        (peft_model(input_ids=ids, labels=labels).loss / len(rows)).backward()
    optimizer.step()
peft_model.save_pretrained(out)
`;

/** A real LoRA adapter directory `dir` that answers `answer` to every one of `questions` (and, in practice, any other). */
export async function makeMarkerAdapter(dir: string, answer: string, questions: string[]): Promise<string> {
  const cache = process.env.VOLT_MODEL_CACHE_DIR ?? process.env.VOLT_DATA_DIR ?? path.join(root, '.volt');
  await run(path.join(root, '.venv/bin/python'), ['-c', MARKER_SCRIPT, cache, dir, answer, JSON.stringify(questions)], {
    cwd: root,
    env: { ...process.env, PYTHONPATH: path.join(root, 'trainer'), HF_HUB_OFFLINE: '1' },
    timeout: 600_000,
  });
  return dir;
}
