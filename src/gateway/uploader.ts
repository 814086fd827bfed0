import type { GatewayStore } from './store.js';
import type { WalEntry, WriteAheadLog } from './wal.js';

interface Job {
  entry: WalEntry;
  done: Promise<void>;
  resolve: () => void;
}

/**
 * Puts WAL entries into the object store in the background with bounded concurrency, retrying until they land
 * (puts are idempotent by key). `flush(prefix)` waits for everything queued under a key prefix.
 */
export class SpanUploader {
  private queue: Job[] = [];
  private pending = new Set<Job>();
  private running = 0;
  private stopped = false;
  failures = 0;

  constructor(
    private readonly store: GatewayStore,
    private readonly wal: WriteAheadLog,
    private readonly opts: { concurrency?: number; retryBaseMs?: number; log?: (msg: string, err: unknown) => void } = {},
  ) {}

  get pendingCount(): number {
    return this.pending.size;
  }

  enqueue(entry: WalEntry): void {
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    const job: Job = { entry, done, resolve };
    this.pending.add(job);
    this.queue.push(job);
    this.pump();
  }

  async flush(prefix = ''): Promise<void> {
    const waits = [...this.pending].filter((j) => j.entry.key.startsWith(prefix)).map((j) => j.done);
    await Promise.all(waits);
  }

  /** Stops starting new puts; entries still queued stay in the WAL for the next process to replay. */
  stop(): void {
    this.stopped = true;
  }

  private pump(): void {
    const limit = this.opts.concurrency ?? 16;
    while (!this.stopped && this.running < limit && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.running++;
      void this.upload(job).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async upload(job: Job): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        const body = Buffer.from(job.entry.json);
        await this.store.putBytes(job.entry.key, body, body.length, 'application/json');
        await this.wal.markUploaded(job.entry);
        this.pending.delete(job);
        job.resolve();
        return;
      } catch (err) {
        this.failures++;
        this.opts.log?.(`span upload failed (attempt ${attempt + 1}) for ${job.entry.key}`, err);
        const base = this.opts.retryBaseMs ?? 200;
        await new Promise((r) => setTimeout(r, Math.min(base * 2 ** attempt, 10_000) * (0.5 + Math.random())));
      }
    }
  }
}
