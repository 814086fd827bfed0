import { parseSpanKey, segmentKeyFor } from '../../storage/spans.js';
import type { SegmentCompression } from '../../storage/span-compression.js';
import { UploadEncoder, type EncodedObject } from './upload-encoder.js';
import type { GatewayStore } from '../store.js';
import type { WalEntry, WriteAheadLog } from './wal.js';
import { entryRef } from './wal-segment.js';

interface Job {
  entry: WalEntry;
  done: Promise<void>;
  resolve: () => void;
  /** Someone waits on it (flush); it uploads even while calls are in flight. */
  urgent: boolean;
  queuedAt: number;
  /** The attempt's spans prefix it may share a segment under; null = uploaded alone at its own key. */
  group: string | null;
  seq: number;
  /** Started as part of another job's segment; skipped when it reaches the queue's head. */
  taken: boolean;
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
  /** Most spans, and JSON characters, in one segment object. */
  maxSegmentSpans?: number;
  maxSegmentBytes?: number;
  /** How segment objects are compressed (default brotli; readSpans recognises each by its first bytes). */
  compression?: SegmentCompression;
  /** Builds span objects from WAL entries (upload-encoder.ts); default: on the event loop, compression on libuv's pool. */
  encoder?: UploadEncoder;
  log?: (msg: string, err: unknown) => void;
  /** After each put: the object's bytes, the bytes of the records it holds, and per span seconds since it was queued (metrics). */
  onUploaded?: (bytes: number, lagsS: number[], spanBytes: number) => void;
}

/**
 * Puts WAL entries into the object store in the background with bounded concurrency, retrying until they land
 * (puts are idempotent by key). Queued spans of one rollout attempt go out together as one segment object
 * (keys.spanSegment), so a put carries up to maxSegmentSpans spans. `flush(prefix)` moves everything under a key
 * prefix to the front and waits for it.
 */
export class SpanUploader {
  private queue: Job[] = [];
  private pending = new Set<Job>();
  /** Queued (not started) span jobs by spans prefix, then seq. */
  private groups = new Map<string, Map<number, Job>>();
  private pumpScheduled = false;
  private running = 0;
  /** JSON characters waiting in the queue (not yet started); the deferral bound. */
  private queuedBytes = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly encoder: UploadEncoder;
  failures = 0;

  constructor(
    private readonly store: GatewayStore,
    private readonly wal: WriteAheadLog,
    private readonly opts: UploaderOptions = {},
  ) {
    this.encoder = opts.encoder ?? new UploadEncoder({ worker: false });
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  enqueue(entry: WalEntry): void {
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    const span = parseSpanKey(entry.key);
    let group: string | null = null;
    if (span && span.first === span.last) {
      const members = this.groups.get(span.spansPrefix) ?? new Map<number, Job>();
      this.groups.set(span.spansPrefix, members);
      // A seq already queued (never expected) is uploaded alone rather than dropped.
      if (!members.has(span.first)) group = span.spansPrefix;
    }
    const job: Job = {
      entry,
      done,
      resolve,
      urgent: false,
      queuedAt: performance.now(),
      group,
      seq: span?.first ?? -1,
      taken: false,
    };
    if (group) this.groups.get(group)!.set(job.seq, job);
    this.pending.add(job);
    this.queue.push(job);
    this.queuedBytes += entry.bytes;
    // Pumped once per event-loop turn, so the spans one WAL write acknowledged can share a segment.
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  async flush(prefix = ''): Promise<void> {
    const waits = [...this.pending].filter((j) => j.entry.key.startsWith(prefix));
    for (const j of waits) j.urgent = true;
    // Stable partition: the waited-for entries go first, each side keeps its WAL order.
    const queued = this.queue.filter((j) => !j.taken);
    this.queue = [...queued.filter((j) => j.urgent), ...queued.filter((j) => !j.urgent)];
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
    const {
      concurrency = 16,
      maxDeferredBytes = 0,
      idleForMs,
      idleAfterMs = 20,
      maxDeferMs = 10_000,
      busyConcurrency = 4,
    } = this.opts;
    if (head.urgent || maxDeferredBytes === 0 || !idleForMs || idleForMs() >= idleAfterMs) return concurrency;
    if (this.queuedBytes >= 2 * maxDeferredBytes) return concurrency;
    // Past a bound while busy: trickle, so the catch-up does not stall the calls in flight all at once.
    if (this.queuedBytes >= maxDeferredBytes || performance.now() - head.queuedAt >= maxDeferMs)
      return Math.max(1, Math.min(concurrency, busyConcurrency));
    return 0;
  }

  private pump(): void {
    while (!this.stopped && this.queue.length > 0) {
      if (this.queue[0]!.taken) {
        this.queue.shift();
        continue;
      }
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
      const jobs = this.take(this.queue.shift()!);
      this.running++;
      void this.upload(jobs).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /**
   * The head job and the queued spans of its attempt with consecutive seqs around it, in seq order. Consecutive only:
   * a segment's name then fixes its content, so a re-upload after a WAL replay can only rewrite it with the same spans.
   */
  private take(head: Job): Job[] {
    const members = head.group ? this.groups.get(head.group) : undefined;
    const { maxSegmentSpans = 256, maxSegmentBytes = 4 * 1024 * 1024 } = this.opts;
    const jobs = [head];
    let bytes = head.entry.bytes;
    const fits = (j: Job | undefined): j is Job =>
      !!j && jobs.length < maxSegmentSpans && bytes + j.entry.bytes <= maxSegmentBytes;
    for (let s = head.seq - 1, j = members?.get(s); fits(j); j = members?.get(--s)) {
      jobs.unshift(j);
      bytes += j.entry.bytes;
    }
    for (let s = head.seq + 1, j = members?.get(s); fits(j); j = members?.get(++s)) {
      jobs.push(j);
      bytes += j.entry.bytes;
    }
    for (const j of jobs) {
      j.taken = true;
      members?.delete(j.seq);
    }
    if (members?.size === 0) this.groups.delete(head.group!);
    this.queuedBytes -= bytes;
    return jobs;
  }

  private async upload(jobs: Job[]): Promise<void> {
    const first = jobs[0]!;
    const key = first.group ? segmentKeyFor(first.entry.key, first.seq, jobs.at(-1)!.seq) : first.entry.key;
    const { compression = 'brotli' } = this.opts;
    let encoded: EncodedObject | null = null;
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        // Inside the retry loop: a failed encoding (a worker that died) is retried like a failed put.
        encoded ??= await this.encoder.encode({
          entries: jobs.map((j) => entryRef(j.entry)),
          segment: first.group !== null,
          compression,
        });
        await this.store.putBytes(key, encoded.body, encoded.body.length, encoded.contentType);
        const now = performance.now();
        this.opts.onUploaded?.(
          encoded.body.length,
          jobs.map((j) => (now - j.queuedAt) / 1000),
          encoded.spanBytes,
        );
        for (const j of jobs) {
          await this.wal.markUploaded(j.entry);
          this.pending.delete(j);
          j.resolve();
        }
        return;
      } catch (err) {
        this.failures++;
        this.opts.log?.(`span upload failed (attempt ${attempt + 1}) for ${key}`, err);
        const base = this.opts.retryBaseMs ?? 200;
        await new Promise((r) => setTimeout(r, Math.min(base * 2 ** attempt, 10_000) * (0.5 + Math.random())));
      }
    }
  }
}
