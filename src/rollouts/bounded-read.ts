import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** The first `max` bytes of a regular file as UTF-8, or null if the agent wrote none (or a FIFO, or a symlink). */
export async function readBounded(file: string, max: number): Promise<string | null> {
  let handle;
  try {
    // Non-blocking and no symlink: an agent cannot park the worker on a FIFO or point it at another file.
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    if (!(await handle.stat()).isFile()) return null;
    const buf = Buffer.alloc(max);
    const { bytesRead } = await handle.read(buf, 0, max, 0);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}
