import fs from 'node:fs';
import path from 'node:path';
import {
  appendLines,
  closeSegment,
  createSegment,
  fdatasync,
  fsyncDir,
  readSegment,
  type Segment,
  type WalEntry,
} from './wal-segment.js';

export type { WalEntry } from './wal-segment.js';

/**
 * When an append counts as durable. 'write': once write(2) returned (the bytes are in the page cache, so they
 * survive `kill -9` of the gateway; fdatasync follows in the background within `syncIntervalMs`, so an OS crash or
 * power loss can lose that window). 'fsync': once fdatasync returned (also survives an OS crash; costs a disk
 * flush per group commit on the response path).
 */
export type WalSync = 'write' | 'fsync';

export interface WalOptions {
  sync?: WalSync;
  /**
   * 'write' mode: how long appended bytes may wait for their background fdatasync. Syncing rarely is cheaper per span,
   * and each flush stalls calls that overlap it (measured at concurrency 1, median of 11 interleaved rounds: calls took
   * ~50 µs longer with 5 ms than with 200 ms).
   */
  syncIntervalMs?: number;
  maxSegmentBytes?: number;
  /** An idle segment at least this big whose entries are all uploaded is rotated early. */
  rotateIdleBytes?: number;
  /** 'write' mode: a background fdatasync failed (nobody awaits it, so it is reported here). */
  onSyncError?: (err: unknown) => void;
}

interface Queued {
  key: string;
  /** One JSON document: a string, or its pieces (bytes received are written as they are, not re-encoded). */
  value: string | (string | Buffer)[];
  resolve: (entry: WalEntry) => void;
  reject: (err: unknown) => void;
}

interface SyncWaiter {
  seq: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const LINE_END = Buffer.from('}\n');

/**
 * A per-process append-only JSONL write-ahead log. The lines appended in one event-loop turn go out in one
 * synchronous write(2) (no torn line survives a process kill); fdatasync is group-committed: one round covers every
 * line written before it started. A sealed segment whose entries are all uploaded is deleted.
 */
export class WriteAheadLog {
  private current: Segment | null = null;
  private live = new Set<Segment>();
  private counter = 0;
  private written = 0;
  private synced = 0;
  private queued: Queued[] = [];
  private waiters: SyncWaiter[] = [];
  private syncing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private dirSyncNeeded = false;
  private readonly prefix = `${process.pid}-${Date.now()}`;
  private readonly opts: Required<Omit<WalOptions, 'onSyncError'>> & Pick<WalOptions, 'onSyncError'>;
  /** fdatasync rounds so far; fewer than appends when group commit batches them. */
  commits = 0;

  constructor(
    readonly dir: string,
    opts: WalOptions = {},
  ) {
    this.opts = {
      sync: opts.sync ?? 'write',
      syncIntervalMs: opts.syncIntervalMs ?? 100,
      maxSegmentBytes: opts.maxSegmentBytes ?? 8 * 1024 * 1024,
      rotateIdleBytes: opts.rotateIdleBytes ?? 256 * 1024,
      onSyncError: opts.onSyncError,
    };
  }

  /** Reads the segments left by earlier processes; they are adopted (sealed) and deleted once uploaded. */
  async open(): Promise<WalEntry[]> {
    await fs.promises.mkdir(this.dir, { recursive: true });
    const names = (await fs.promises.readdir(this.dir)).filter((n) => n.endsWith('.jsonl')).sort();
    const replay: WalEntry[] = [];
    for (const name of names) {
      const { segment, entries } = await readSegment(this.dir, name);
      replay.push(...entries);
      this.live.add(segment);
      await this.maybeDelete(segment);
    }
    return replay;
  }

  get bytes(): number {
    let total = 0;
    for (const s of this.live) total += s.bytes;
    return total;
  }

  /**
   * Resolves once the entry is durable under the sync policy; rejects if the write or its fdatasync failed. Appends
   * of one event-loop turn go out in one write(2) at the end of the turn; `alone` (no other append can come this
   * turn, e.g. no other call is in flight) writes at once instead of waiting for the turn to end.
   */
  append(key: string, value: string | (string | Buffer)[], alone = false): Promise<WalEntry> {
    return new Promise((resolve, reject) => {
      const queued = this.queued.push({ key, value, resolve, reject });
      if (alone) this.writeQueued();
      else if (queued === 1) setImmediate(() => this.writeQueued());
    });
  }

  private writeQueued(): void {
    const batch = this.queued.splice(0);
    if (batch.length === 0) return;
    let segment: Segment;
    const entries: WalEntry[] = [];
    try {
      segment = this.writable();
      const lines: Buffer[] = [];
      let at = segment.bytes;
      for (const q of batch) {
        const head = Buffer.from(`{"key":${JSON.stringify(q.key)},"value":`);
        const parts = (typeof q.value === 'string' ? [q.value] : q.value).map((p) =>
          typeof p === 'string' ? Buffer.from(p) : p,
        );
        const bytes = parts.reduce((n, p) => n + p.length, 0);
        entries.push({
          key: q.key,
          offset: at + head.length,
          bytes,
          json: typeof q.value === 'string' ? q.value : undefined,
          segment,
        });
        at += head.length + bytes + LINE_END.length;
        lines.push(head, ...parts, LINE_END);
      }
      appendLines(segment, lines, batch.length);
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    const seq = ++this.written;
    if (segment.bytes >= this.opts.maxSegmentBytes) this.seal(segment);
    const resolve = () => {
      batch.forEach((q, i) => q.resolve(entries[i]!));
    };
    if (this.opts.sync === 'write') {
      this.timer ??= setTimeout(() => {
        this.timer = null;
        void this.startSync();
      }, this.opts.syncIntervalMs).unref();
      resolve();
      return;
    }
    this.waiters.push({ seq, resolve, reject: (err) => batch.forEach((q) => q.reject(err)) });
    void this.startSync();
  }

  /** Called by the uploader once an entry is in the object store. */
  async markUploaded(entry: WalEntry): Promise<void> {
    const segment = entry.segment;
    segment.uploaded++;
    // Rotate an idle, fully uploaded segment early so the log stays small between bursts.
    if (segment === this.current && segment.uploaded === segment.entries && segment.bytes >= this.opts.rotateIdleBytes)
      this.seal(segment);
    await this.maybeDelete(segment);
  }

  /** Syncs everything written so far and closes the segment files. */
  async close(): Promise<void> {
    this.writeQueued();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.current) this.seal(this.current);
    while (this.syncing || this.synced < this.written) await (this.syncing ?? this.startSync());
  }

  /** Never rejects: failures reach the waiters (or onSyncError). */
  private startSync(): Promise<void> {
    this.syncing ??= this.syncLoop().finally(() => {
      this.syncing = null;
      // Lines written after the loop's last check but before it settled would otherwise wait for nobody.
      if (this.synced < this.written || this.dirSyncNeeded) void this.startSync();
    });
    return this.syncing;
  }

  private async syncLoop(): Promise<void> {
    while (this.synced < this.written || this.dirSyncNeeded) {
      const target = this.written;
      const dirty = [...this.live].filter((s) => s.dirty && s.fd !== null);
      for (const s of dirty) s.dirty = false;
      let failure: unknown = null;
      try {
        if (this.dirSyncNeeded) {
          this.dirSyncNeeded = false;
          await fsyncDir(this.dir);
        }
        await Promise.all(dirty.map((s) => fdatasync(s.fd!)));
        this.commits++;
      } catch (err) {
        failure = err;
        if (this.opts.sync === 'write') this.opts.onSyncError?.(err);
      }
      this.synced = target;
      const due = this.waiters.filter((w) => w.seq <= target);
      this.waiters = this.waiters.filter((w) => w.seq > target);
      for (const w of due) {
        if (failure) w.reject(failure);
        else w.resolve();
      }
      // A sealed segment's descriptor is closed only here, after its last fdatasync, so no sync races the close.
      for (const s of dirty) if (s.sealed && !s.dirty) closeSegment(s);
    }
  }

  private writable(): Segment {
    if (this.current) return this.current;
    const file = path.join(this.dir, `${this.prefix}-${String(this.counter++).padStart(6, '0')}.jsonl`);
    this.current = createSegment(file);
    this.dirSyncNeeded = true;
    this.live.add(this.current);
    return this.current;
  }

  private seal(segment: Segment): void {
    if (segment === this.current) this.current = null;
    segment.sealed = true;
    if (!segment.dirty) closeSegment(segment);
    else void this.startSync();
    void this.maybeDelete(segment);
  }

  private async maybeDelete(segment: Segment): Promise<void> {
    if (!segment.sealed || segment.uploaded < segment.entries || !this.live.has(segment)) return;
    this.live.delete(segment);
    // Unlinking while a final fdatasync is pending is safe: the descriptor stays valid until closeSegment.
    await fs.promises.rm(segment.file, { force: true });
  }
}
