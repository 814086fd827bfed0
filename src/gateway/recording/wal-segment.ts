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
  /** Where the document's bytes are in its segment's file (read back from there, not kept in memory). */
  offset: number;
  bytes: number;
  /** The document, kept in memory when it was appended as one string, and for entries replayed at start. */
  json?: string;
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

/**
 * Appends `count` whole lines, given as consecutive buffers, with one synchronous writev(2) (more only if it wrote
 * short): once this returns, a process kill cannot lose them.
 */
export function appendLines(segment: Segment, lines: Buffer[], count: number): void {
  const total = lines.reduce((n, b) => n + b.length, 0);
  const written = lines.length <= 512 ? fs.writevSync(segment.fd!, lines) : 0;
  if (written < total) {
    const rest = Buffer.concat(lines).subarray(written);
    for (let off = 0; off < rest.length;) off += fs.writeSync(segment.fd!, rest, off);
  }
  segment.bytes += total;
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
  const segment: Segment = {
    file,
    fd: null,
    bytes: Buffer.byteLength(text),
    entries: 0,
    uploaded: 0,
    sealed: true,
    dirty: false,
  };
  const entries: WalEntry[] = [];
  for (const line of text.split('\n')) {
    const record = parseLine(line);
    if (!record) continue;
    segment.entries++;
    entries.push({ ...record, offset: -1, bytes: Buffer.byteLength(record.json), segment });
  }
  return { segment, entries };
}

/** The documents of entries, read back from their segments' files where they are not held in memory. */
export function readEntries(refs: readonly EntryRef[]): string[] {
  return refs.map((r) => readEntryLines([r], false).toString('utf8'));
}

/**
 * The entries' UTF-8 bytes as read from their files (or the documents held in memory), one after the other in one
 * buffer, each followed by a line break when `lineBreaks` (JSON Lines): read straight into place, never copied again.
 */
export function readEntryLines(refs: readonly EntryRef[], lineBreaks = true): Buffer {
  const sep = lineBreaks ? 1 : 0;
  let total = 0;
  for (const r of refs) total += (r.json !== undefined ? Buffer.byteLength(r.json) : r.bytes) + sep;
  const out = Buffer.allocUnsafe(total);
  const fds = new Map<string, number>();
  let at = 0;
  try {
    for (const r of refs) {
      if (r.json !== undefined) {
        at += out.write(r.json, at);
      } else {
        let fd = fds.get(r.file);
        if (fd === undefined) fds.set(r.file, (fd = fs.openSync(r.file, 'r')));
        for (let off = 0; off < r.bytes;) {
          const n = fs.readSync(fd, out, at + off, r.bytes - off, r.offset + off);
          if (n === 0) throw new Error(`${r.file}: entry at ${r.offset} is cut short`);
          off += n;
        }
        at += r.bytes;
      }
      if (sep) out[at++] = 0x0a;
    }
  } finally {
    for (const fd of fds.values()) fs.closeSync(fd);
  }
  return out;
}

/** An entry as another thread can read it: its document, or where it is in which file. */
export type EntryRef =
  | { json: string; file?: undefined; offset?: undefined; bytes?: undefined }
  | { json?: undefined; file: string; offset: number; bytes: number };

export function entryRef(entry: WalEntry): EntryRef {
  return entry.json !== undefined
    ? { json: entry.json }
    : { file: entry.segment.file, offset: entry.offset, bytes: entry.bytes };
}

// A torn last line (power loss mid-write, before fdatasync) was never acknowledged in 'fsync' mode, so it is skipped.
function parseLine(line: string): { key: string; json: string } | null {
  if (!line.trim()) return null;
  try {
    const record = JSON.parse(line) as { key?: unknown; value?: unknown };
    return typeof record.key === 'string' && record.value !== undefined
      ? { key: record.key, json: JSON.stringify(record.value) }
      : null;
  } catch {
    return null;
  }
}
