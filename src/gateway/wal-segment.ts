import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

/** One append-only JSONL file of the write-ahead log, with what the log knows about it. */
export interface Segment {
  file: string;
  /** Open only while it is the current segment or its last fdatasync is pending. */
  fd: number | null;
  bytes: number;
  entries: number;
  uploaded: number;
  sealed: boolean;
  /** Written since its last fdatasync. */
  dirty: boolean;
}

/** One durable record: a JSON document (already serialised) that must end up in the object store at `key`. */
export interface WalEntry {
  key: string;
  json: string;
  segment: Segment;
}

export const fdatasync = promisify(fs.fdatasync);

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  await handle.sync().finally(() => handle.close());
}

export function createSegment(file: string): Segment {
  return { file, fd: fs.openSync(file, 'a'), bytes: 0, entries: 0, uploaded: 0, sealed: false, dirty: false };
}

/** Appends `count` whole lines with synchronous write(2) calls: once this returns, a process kill cannot lose them. */
export function appendLines(segment: Segment, lines: Buffer, count: number): void {
  for (let off = 0; off < lines.length; ) off += fs.writeSync(segment.fd!, lines, off);
  segment.bytes += lines.length;
  segment.entries += count;
  segment.dirty = true;
}

export function closeSegment(segment: Segment): void {
  if (segment.fd === null) return;
  fs.closeSync(segment.fd);
  segment.fd = null;
}

/** A segment left by an earlier process, adopted sealed, with its entries in order. */
export async function readSegment(dir: string, name: string): Promise<{ segment: Segment; entries: WalEntry[] }> {
  const file = path.join(dir, name);
  const text = await fs.promises.readFile(file, 'utf8');
  const segment: Segment = { file, fd: null, bytes: Buffer.byteLength(text), entries: 0, uploaded: 0, sealed: true, dirty: false };
  const entries: WalEntry[] = [];
  for (const line of text.split('\n')) {
    const record = parseLine(line);
    if (!record) continue;
    segment.entries++;
    entries.push({ ...record, segment });
  }
  return { segment, entries };
}

// A torn last line (power loss mid-write, before fdatasync) was never acknowledged in 'fsync' mode, so it is skipped.
function parseLine(line: string): { key: string; json: string } | null {
  if (!line.trim()) return null;
  try {
    const record = JSON.parse(line) as { key?: unknown; value?: unknown };
    return typeof record.key === 'string' && record.value !== undefined ? { key: record.key, json: JSON.stringify(record.value) } : null;
  } catch {
    return null;
  }
}
