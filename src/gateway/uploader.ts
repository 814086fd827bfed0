import type { GatewayStore } from './store.js';
import type { WalEntry, WriteAheadLog } from './wal.js';

interface Job {
  entry: WalEntry;
  done: Promise<void>;
  resolve: () => void;
  /** Someone waits on it (flush); it uploads even while calls are in flight. */
  urgent: boolean;
  queuedAt: number;
}

export interface UploaderOptions {
  concurrency?: number;
  /**
   * Bytes of spans the uploader may hold back (durable in the WAL, and in memory) while agent calls are in flight,
   * so that S3 puts do not compete with them for CPU; past this backlog it trickles (busyConcurrency), once idle it
   * uploads at full concurrency. 0 = never hold back.
   */
  maxDeferredBytes?: number;
  /** Milliseconds since the last agent call finished (0 while one is in flight). */
  idleForMs?: () => number;
  /** How long the gateway must have been idle before deferred uploads start. */
  idleAfterMs?: number;
  /** No upload is held back longer than this, so spans reach the store within it even under constant load. */
  maxDeferMs?: number;
  /** Puts at a time while calls are in flight and a bound is passed (full concurrency past twice maxDeferredBytes). */
  busyConcurrency?: number;
  retryBaseMs?: number;
  log?: (msg: string, err: unknown) => void;
}

/**
 * Puts WAL entries into the object store in the background with bounded concurrency, retrying until they land
 * (puts are idempotent by key). `flush(prefix)` moves everything under a key prefix to the front and waits for it.
 */
export class SpanUploader {
  private queue: Job[] = [];
  private pending = new Set<Job>();
  private running = 0;
  /** JSON characters waiting in the queue (not yet started); the deferral bound. */
  private queuedBytes = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  failures = 0;

  constructor(
    private readonly store: GatewayStore,
    private readonly wal: WriteAheadLog,
    private readonly opts: UploaderOptions = {},
  ) {}

  get pendingCount(): number {
    return this.pending.size;
  }

  enqueue(entry: WalEntry): void {
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    const job: Job = { entry, done, resolve, urgent: false, queuedAt: performance.now() };
    this.pending.add(job);
    this.queue.push(job);
    this.queuedBytes += entry.json.length;
    this.pump();
  }

  async flush(prefix = ''): Promise<void> {
    const waits = [...this.pending].filter((j) => j.entry.key.startsWith(prefix));
    for (const j of waits) j.urgent = true;
    // Stable partition: the waited-for entries go first, each side keeps its WAL order.
    this.queue = [...this.queue.filter((j) => j.urgent), ...this.queue.filter((j) => !j.urgent)];
    this.pump();
    await Promise.all(waits.map((j) => j.done));
  }

  /** Stops starting new puts; entries still queued stay in the WAL for the next process to replay. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** How many puts may run for the queue's head now; 0 = hold it back (calls are in flight, bounds not reached). */
  private limitFor(head: Job): number {
    const { concurrency = 16, maxDeferredBytes = 0, idleForMs, idleAfterMs = 20, maxDeferMs = 10_000, busyConcurrency = 4 } = this.opts;
    if (head.urgent || maxDeferredBytes === 0 || !idleForMs || idleForMs() >= idleAfterMs) return concurrency;
    if (this.queuedBytes >= 2 * maxDeferredBytes) return concurrency;
    // Past a bound while busy: trickle, so the catch-up does not stall the calls in flight all at once.
    if (this.queuedBytes >= maxDeferredBytes || performance.now() - head.queuedAt >= maxDeferMs) return Math.max(1, Math.min(concurrency, busyConcurrency));
    return 0;
  }

  private pump(): void {
    while (!this.stopped && this.queue.length > 0) {
      const limit = this.limitFor(this.queue[0]!);
      if (limit === 0) {
        // Re-checked shortly: nothing else wakes the uploader when the last call finishes.
        this.timer ??= setTimeout(() => {
          this.timer = null;
          this.pump();
        }, this.opts.idleAfterMs ?? 20).unref();
        return;
      }
      if (this.running >= limit) return;
      const job = this.queue.shift()!;
      this.queuedBytes -= job.entry.json.length;
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
