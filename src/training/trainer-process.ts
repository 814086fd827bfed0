import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The trainer's last line: where it wrote the new adapter and the update's metrics. */
export interface TrainerDone {
  adapter_dir: string;
  adapter_sha256: string;
  metrics: Record<string, number>;
}

/** The trainer exited 2, its "bad config or batch": the same input would fail again. */
export class TrainerRejectedError extends Error {
  override name = 'TrainerRejectedError';
}

export interface TrainerArgs {
  batch: string;
  out: string;
  config: string;
  /** The adapter to start from (absent: a fresh LoRA on the base model). */
  adapterIn?: string;
  /** Continue from the trainer's saved state in `out` (a retry on the same machine). */
  resume: boolean;
}

/**
 * The one client of the trainer process: `python -m volt_trainer.train`, whose stdout is JSON lines (`step` events
 * go to `onStep`, the `done` event is the result). A nonzero exit rejects with the stderr's tail; exit 2 with
 * TrainerRejectedError. `signal` kills it.
 */
export function runTrainer(
  python: string,
  args: TrainerArgs,
  opts: { signal: AbortSignal; onStep: (step: Record<string, unknown>) => void },
): Promise<TrainerDone> {
  const argv = ['-m', 'volt_trainer.train', '--batch', args.batch, '--out', args.out, '--config', args.config];
  if (args.adapterIn) argv.push('--adapter-in', args.adapterIn);
  if (args.resume) argv.push('--resume');
  return new Promise((resolve, reject) => {
    const child = spawn(python, argv, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HF_HUB_OFFLINE: '1' },
    });
    let done: TrainerDone | null = null;
    let stderrTail = '';
    const onAbort = () => child.kill('SIGKILL');
    opts.signal.addEventListener('abort', onAbort, { once: true });
    createInterface({ input: child.stdout }).on('line', (line) => {
      let event: { event?: string } & Record<string, unknown>;
      try {
        event = JSON.parse(line);
      } catch {
        return;
      }
      if (event.event === 'step') opts.onStep(event);
      if (event.event === 'done') done = event as unknown as TrainerDone;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString()).slice(-4000);
    });
    child.on('error', (err) => reject(err));
    child.on('close', (code, signal) => {
      opts.signal.removeEventListener('abort', onAbort);
      if (opts.signal.aborted) return reject(opts.signal.reason);
      if (code === 0 && done) return resolve(done);
      const message = `trainer exited with ${signal ?? code}: ${stderrTail.trim().split('\n').slice(-5).join(' | ')}`;
      reject(code === 2 ? new TrainerRejectedError(message) : new Error(message));
    });
  });
}
