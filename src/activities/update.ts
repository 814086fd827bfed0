import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { availableParallelism } from 'node:os';
import { createInterface } from 'node:readline';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { BatchFileError, batchFileSamples } from '../batches/batch-file.js';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { ActivityDeps } from './deps.js';
import type { PolicyRef } from '../contracts/policy.js';

export interface TrainPolicyInput {
  config: RunConfig;
  iteration: number;
  policy: PolicyRef;
  batchKey: string;
}

/** The trainer's view of the run config (snake_case TrainConfig fields of trainer/volt_trainer/config.py). */
export function trainerConfig(config: RunConfig, iteration: number, samples: number, dataDir: string) {
  const t = config.trainer;
  return {
    model: config.model.base,
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

export const createUpdateActivities = (deps: ActivityDeps) => ({
  /**
   * Run the Python trainer on the iteration's batch, starting from the current policy's adapter, streaming its
   * per-step JSON lines into heartbeats. A retry on the same worker resumes from the trainer's saved state; the
   * new adapter is stored content-addressed and named after its hash, so a re-run never makes a second copy.
   */
  async trainPolicy(input: TrainPolicyInput): Promise<{ policy: PolicyRef; metrics: Record<string, number> }> {
    const ctx = Context.current();
    const { config, iteration, policy } = input;
    const work = path.join(deps.env.dataDir, 'trainer', config.runId, String(iteration));
    const out = path.join(work, 'out');
    const batchFile = path.join(work, 'samples.safetensors');
    await mkdir(out, { recursive: true });
    await deps.store.getFile(input.batchKey, batchFile);
    const samples = await batchFileSamples(batchFile).catch((err: unknown) => {
      // A corrupt batch file fails the same way on every retry.
      if (err instanceof BatchFileError)
        throw ApplicationFailure.create({ type: FailureType.InvalidBatch, message: err.message, nonRetryable: true });
      throw err;
    });
    const cfgFile = path.join(work, 'trainer.json');
    await writeFile(
      cfgFile,
      JSON.stringify(trainerConfig(config, iteration, samples, deps.env.modelCacheDir), null, 2),
    );

    const args = ['-m', 'volt_trainer.train', '--batch', batchFile, '--out', out, '--config', cfgFile];
    if (policy.sha256) {
      const adapterIn = path.join(work, 'adapter-in');
      if (!existsSync(path.join(adapterIn, 'adapter_config.json')))
        await deps.store.getCheckpoint(policy.sha256, adapterIn);
      args.push('--adapter-in', adapterIn);
    }
    if (existsSync(path.join(out, 'state'))) args.push('--resume');

    const t0 = performance.now();
    const done = await runTrainer(deps.python, args, ctx);
    const trainerSeconds = (performance.now() - t0) / 1000;
    const stored = await deps.store.putDirContentAddressed(done.adapter_dir);
    const trained: PolicyRef = {
      name: `${config.runId}-${stored.sha256.slice(0, 12)}`,
      checkpointKey: stored.prefix,
      sha256: stored.sha256,
      iteration,
    };
    return { policy: trained, metrics: { ...done.metrics, trainer_seconds: trainerSeconds } };
  },
});

interface DoneEvent {
  adapter_dir: string;
  adapter_sha256: string;
  metrics: Record<string, number>;
}

function runTrainer(python: string, args: string[], ctx: Context): Promise<DoneEvent> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HF_HUB_OFFLINE: '1' },
    });
    let done: DoneEvent | null = null;
    let stderrTail = '';
    const onCancel = () => child.kill('SIGKILL');
    ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
    const beat = setInterval(() => ctx.heartbeat({ phase: 'trainer running' }), 5000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      let event: { event?: string } & Record<string, unknown>;
      try {
        event = JSON.parse(line);
      } catch {
        return;
      }
      if (event.event === 'step') ctx.heartbeat(event);
      if (event.event === 'done') done = event as unknown as DoneEvent;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString()).slice(-4000);
    });
    child.on('error', (err) => reject(err));
    child.on('close', (code, signal) => {
      clearInterval(beat);
      ctx.cancellationSignal.removeEventListener('abort', onCancel);
      if (ctx.cancellationSignal.aborted) return reject(ctx.cancellationSignal.reason);
      if (code === 0 && done) return resolve(done);
      const message = `trainer exited with ${signal ?? code}: ${stderrTail.trim().split('\n').slice(-5).join(' | ')}`;
      // Exit 2 is the trainer's "bad config or batch": the same input would fail again.
      if (code === 2)
        reject(ApplicationFailure.create({ type: FailureType.TrainerFailed, message, nonRetryable: true }));
      else reject(new Error(message));
    });
  });
}
