import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';

/** sha256 (lowercase hex) of bytes or a string (UTF-8). */
export function sha256Bytes(data: Buffer | Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** sha256 of a stream or async iterable of chunks, consuming it without buffering it. */
export async function sha256Stream(
  stream: Readable | AsyncIterable<Buffer | Uint8Array | string>,
): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    hash.update(buf);
    size += buf.length;
  }
  return { sha256: hash.digest('hex'), size };
}

export function sha256File(file: string): Promise<{ sha256: string; size: number }> {
  return sha256Stream(createReadStream(file));
}

export interface DirEntry {
  /** '/'-separated path relative to the directory. */
  path: string;
  size: number;
  sha256: string;
}

/**
 * Hash a directory by content: sorted relative paths with each file's size and sha256, so the same files give
 * the same digest regardless of mtimes, permissions or readdir order. Only regular files count; symlinks are refused.
 */
export async function sha256Dir(dir: string): Promise<{ sha256: string; files: DirEntry[] }> {
  const files: DirEntry[] = [];
  for (const rel of await listFiles(dir)) {
    const { sha256, size } = await sha256File(path.join(dir, ...rel.split('/')));
    files.push({ path: rel, size, sha256 });
  }
  const hash = createHash('sha256');
  for (const f of files) hash.update(`${f.path}\0${f.size}\0${f.sha256}\n`);
  return { sha256: hash.digest('hex'), files };
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(child);
      else if (entry.isFile()) out.push(child);
      else throw new Error(`cannot upload ${path.join(dir, child)}: only regular files and directories are allowed`);
    }
  };
  await walk('');
  // UTF-8 byte order, the order S3 lists keys in.
  return out.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}
