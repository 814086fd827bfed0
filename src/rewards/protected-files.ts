import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { glob, isDynamicPattern } from 'tinyglobby';
import type { ProtectedSnapshot } from '../contracts/rollout-outcome.js';

async function sha256(file: string): Promise<string | null> {
  try {
    return createHash('sha256').update(await readFile(file)).digest('hex');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Relative paths the globs cover now; literal paths are kept even when absent, so creating one is caught. */
async function coveredPaths(workdir: string, patterns: readonly string[]): Promise<string[]> {
  const found = await glob([...patterns], { cwd: workdir, dot: true, onlyFiles: true, followSymbolicLinks: false, expandDirectories: false });
  const literal = patterns.filter((p) => !isDynamicPattern(p)).map((p) => path.posix.normalize(p));
  return [...new Set([...found, ...literal])].sort();
}

/** Hash every protected file before the agent runs. */
export async function snapshotProtected(workdir: string, patterns: readonly string[]): Promise<ProtectedSnapshot> {
  const files: Record<string, string | null> = {};
  for (const rel of await coveredPaths(workdir, patterns)) files[rel] = await sha256(path.join(workdir, rel));
  return { files };
}

/** Paths whose content changed, vanished, or newly appeared under the globs since the snapshot. */
export async function tamperedFiles(workdir: string, patterns: readonly string[], before: ProtectedSnapshot): Promise<string[]> {
  const now = await snapshotProtected(workdir, patterns);
  const all = new Set([...Object.keys(before.files), ...Object.keys(now.files)]);
  return [...all].filter((rel) => (before.files[rel] ?? null) !== (now.files[rel] ?? null)).sort();
}
