import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Write a task's hidden files (tests the agent must not see) into the workdir after the agent exited. Whatever the
 * agent left on those paths goes first, symlinks included, and every parent is a real directory: the worker
 * never writes through a link the agent planted. Paths are checked by workdirPathSchema on the way in.
 */
export async function placeHiddenFiles(workdir: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const segments = rel.split('/');
    let dir = workdir;
    for (const segment of segments.slice(0, -1)) {
      dir = path.join(dir, segment);
      const found = await lstat(dir).catch(() => null);
      if (found?.isDirectory()) continue;
      if (found) await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { mode: 0o755 });
    }
    const file = path.join(workdir, rel);
    await rm(file, { recursive: true, force: true });
    // 'wx' (O_EXCL): fails rather than follow anything that reappeared on the path.
    await writeFile(file, content, { flag: 'wx', mode: 0o644 });
  }
}
