import fs from 'node:fs/promises';
import path from 'node:path';

/** One durable record: a JSON document (already serialised) that must end up in the object store at `key`. */
export interface WalEntry {
  key: string;
  json: string;
  segment: Segment;
}

interface Segment {
  file: string;
  bytes: number;
  entries: number;
  uploaded: number;
  sealed: boolean;
}

interface Pending {
  line: string;
  key: string;
  json: string;
  resolve: (e: WalEntry) => void;
  reject: (err: unknown) => void;
}

/**
 * A per-process append-only JSONL write-ahead log. Concurrent appends are group-committed: everything queued
 * while one write+fsync runs goes out in the next single write+fsync. A sealed segment whose entries are all
 * uploaded is deleted.
 */
export class WriteAheadLog {
  private current: Segment | null = null;
  private handle: fs.FileHandle | null = null;
  private pending: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private live = new Set<Segment>();
  private counter = 0;
  private readonly prefix = `${process.pid}-${Date.now()}`;
  /** write+fsync rounds so far; fewer than appends when group commit batches them. */
  commits = 0;

  constructor(
    readonly dir: string,
    private readonly maxSegmentBytes = 8 * 1024 * 1024,
    private readonly rotateIdleBytes = 256 * 1024,
  ) {}

  /** Reads the segments left by earlier processes; they are adopted (sealed) and deleted once uploaded. */
  async open(): Promise<WalEntry[]> {
    await fs.mkdir(this.dir, { recursive: true });
    const names = (await fs.readdir(this.dir)).filter((n) => n.endsWith('.jsonl')).sort();
    const replay: WalEntry[] = [];
    for (const name of names) {
      const file = path.join(this.dir, name);
      const text = await fs.readFile(file, 'utf8');
      const segment: Segment = { file, bytes: Buffer.byteLength(text), entries: 0, uploaded: 0, sealed: true };
      for (const line of text.split('\n')) {
        const record = parseLine(line);
        if (!record) continue;
        segment.entries++;
        replay.push({ ...record, segment });
      }
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

  append(key: string, json: string): Promise<WalEntry> {
    const line = `{"key":${JSON.stringify(key)},"value":${json}}\n`;
    return new Promise((resolve, reject) => {
      this.pending.push({ line, key, json, resolve, reject });
      this.flushing ??= this.flushLoop();
    });
  }

  /** Called by the uploader once an entry is in the object store. */
  async markUploaded(entry: WalEntry): Promise<void> {
    const segment = entry.segment;
    segment.uploaded++;
    // Rotate an idle, fully uploaded segment early so the log stays small between bursts.
    if (segment === this.current && !this.flushing && segment.uploaded === segment.entries && segment.bytes >= this.rotateIdleBytes) {
      await this.seal(segment);
    }
    await this.maybeDelete(segment);
  }

  async close(): Promise<void> {
    await this.flushing;
    if (this.current) await this.seal(this.current);
  }

  private async flushLoop(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0);
      try {
        const { segment, handle } = await this.writable();
        const data = batch.map((p) => p.line).join('');
        await handle.write(data);
        await handle.datasync();
        this.commits++;
        segment.bytes += Buffer.byteLength(data);
        segment.entries += batch.length;
        for (const p of batch) p.resolve({ key: p.key, json: p.json, segment });
        if (segment.bytes >= this.maxSegmentBytes) await this.seal(segment);
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    this.flushing = null;
  }

  private async writable(): Promise<{ segment: Segment; handle: fs.FileHandle }> {
    if (this.current && this.handle) return { segment: this.current, handle: this.handle };
    const file = path.join(this.dir, `${this.prefix}-${String(this.counter++).padStart(6, '0')}.jsonl`);
    this.handle = await fs.open(file, 'a');
    const dir = await fs.open(this.dir, 'r');
    await dir.sync().finally(() => dir.close());
    this.current = { file, bytes: 0, entries: 0, uploaded: 0, sealed: false };
    this.live.add(this.current);
    return { segment: this.current, handle: this.handle };
  }

  private async seal(segment: Segment): Promise<void> {
    if (segment === this.current) {
      const handle = this.handle;
      this.current = null;
      this.handle = null;
      await handle?.close();
    }
    segment.sealed = true;
    await this.maybeDelete(segment);
  }

  private async maybeDelete(segment: Segment): Promise<void> {
    if (!segment.sealed || segment.uploaded < segment.entries || !this.live.has(segment)) return;
    this.live.delete(segment);
    await fs.rm(segment.file, { force: true });
  }
}

// A torn last line (crash mid-write, before fsync returned) was never acknowledged, so it is skipped.
function parseLine(line: string): { key: string; json: string } | null {
  if (!line.trim()) return null;
  try {
    const record = JSON.parse(line) as { key?: unknown; value?: unknown };
    return typeof record.key === 'string' && record.value !== undefined ? { key: record.key, json: JSON.stringify(record.value) } : null;
  } catch {
    return null;
  }
}
