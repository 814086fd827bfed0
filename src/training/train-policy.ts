import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { batchFileSamples } from '../batches/batch-file.js';
import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import type { ObjectStore } from '../storage/object-store.js';
import { runTrainer } from './trainer-process.js';

export interface TrainPolicyInput {
  config: RunConfig;
  iteration: number;
  policy: PolicyRef;
  batchKey: string;
  /** A team training an adapter per role: the role this update trains (its own work dir, its adapter named after it). */
  role?: string;
}

export interface TrainPolicyDeps {
  store: ObjectStore;
  /** Python interpreter with volt_trainer installed. */
  python: string;
  /** The trainer's work files live under `<dataDir>/trainer/<run>/<iteration>` (kept, so a retry resumes). */
  dataDir: string;
  /** The base model's cache (the trainer's data_dir). */
  modelCacheDir: string;
}

/** The trainer's view of the run config (snake_case TrainConfig fields of trainer/volt_trainer/config.py). */
export function trainerConfig(config: RunConfig, iteration: number, samples: number, dataDir: string) {
  const t = config.trainer;
  return {
    model: config.model.weights ?? config.model.base,
    data_dir: dataDir,
    seed: config.seed * 1000 + iteration,
    epochs: t.epochs,
    num_minibatches: Math.max(1, Math.ceil(samples / t.minibatchSize)),
    micro_batch_size: t.microBatchSize,
    lr: t.lr,
    weight_decay: t.weightDecay,
    max_grad_norm: t.maxGradNorm,
    clip_low: t.clipLow,
    clip_high: t.clipHigh,
    tis_cap: t.tisCap,
    kl_coef: t.klCoef,
    aggregation: t.lossAggregation,
    update_path: t.updatePath,
    lora_r: config.model.lora.rank,
    lora_alpha: config.model.lora.alpha,
    lora_dropout: config.model.lora.dropout,
    target_modules: config.model.lora.targetModules,
    // The update runs while agents and the model server are idle, so it may use every core (fixed per machine).
    threads: Math.max(1, Math.min(availableParallelism(), 8)),
  };
}

/**
 * Run the trainer on the iteration's batch, starting from the current policy's adapter. A retry on the same machine
 * resumes from the trainer's saved state; the new adapter is stored content-addressed and named after its hash, so a
 * re-run never makes a second copy. Throws BatchFileError for a corrupt batch, TrainerRejectedError on exit 2.
 */
export async function trainPolicy(
  input: TrainPolicyInput,
  deps: TrainPolicyDeps,
  opts: { signal: AbortSignal; onStep: (step: Record<string, unknown>) => void },
): Promise<{ policy: PolicyRef; metrics: Record<string, number> }> {
  const { config, iteration, policy, role } = input;
  const work = path.join(deps.dataDir, 'trainer', config.runId, String(iteration), ...(role ? [role] : []));
  const out = path.join(work, 'out');
  const batch = path.join(work, 'samples.safetensors');
  await mkdir(out, { recursive: true });
  await deps.store.getFile(input.batchKey, batch);
  const samples = await batchFileSamples(batch);
  const cfgFile = path.join(work, 'trainer.json');
  await writeFile(cfgFile, JSON.stringify(trainerConfig(config, iteration, samples, deps.modelCacheDir), null, 2));
  let adapterIn: string | undefined;
  if (policy.sha256) {
    adapterIn = path.join(work, 'adapter-in');
    if (!existsSync(path.join(adapterIn, 'adapter_config.json')))
      await deps.store.getCheckpoint(policy.sha256, adapterIn);
  }
  const resume = existsSync(path.join(out, 'state'));

  const t0 = performance.now();
  const done = await runTrainer(deps.python, { batch, out, config: cfgFile, adapterIn, resume }, opts);
  const trainerSeconds = (performance.now() - t0) / 1000;
  const stored = await deps.store.putDirContentAddressed(done.adapter_dir);
  const trained: PolicyRef = {
    name: `${config.runId}${role ? `-${role}` : ''}-${stored.sha256.slice(0, 12)}`,
    checkpointKey: stored.prefix,
    sha256: stored.sha256,
    iteration,
  };
  return { policy: trained, metrics: { ...done.metrics, trainer_seconds: trainerSeconds } };
}
