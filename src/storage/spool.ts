import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface Spooled {
  file: string;
  sha256: string;
  size: number;
  /** Delete the temporary file; safe to call more than once. */
  remove(): Promise<void>;
}

/**
 * Write a stream of unknown length to a temporary file, hashing it on the way. A single signed PUT needs the
 * length and sha256 up front, and the embedded S3 server lacks the multipart listing minio-js relies on for
 * unknown-length streams, so spooling to disk keeps memory bounded and works against both.
 */
export async function spoolToFile(
  source: Readable | AsyncIterable<Buffer | Uint8Array | string>,
  tmpRoot: string,
): Promise<Spooled> {
  const dir = await mkdtemp(path.join(tmpRoot, 'volt-spool-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  const file = path.join(dir, 'body');
  const hash = createHash('sha256');
  let size = 0;
  const tap = new Transform({
    transform(chunk: Buffer | string, _enc, done) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      hash.update(buf);
      size += buf.length;
      done(null, buf);
    },
  });
  try {
    await pipeline(source, tap, createWriteStream(file));
  } catch (err) {
    await remove();
    throw err;
  }
  return { file, sha256: hash.digest('hex'), size, remove };
}
