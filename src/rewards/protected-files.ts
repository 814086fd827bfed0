import type { ProtectedSnapshot } from '../contracts/rollout-outcome.js';
import { localFiles, type WorkdirFiles } from './workdir-files.js';

/** A local workdir path, or the files a runner reported from where the workdir lives. */
export type Workdir = string | WorkdirFiles;
export const filesOf = (workdir: Workdir): WorkdirFiles =>
  typeof workdir === 'string' ? localFiles(workdir) : workdir;

/** Hash every protected file before the agent runs. */
export async function snapshotProtected(workdir: Workdir, patterns: readonly string[]): Promise<ProtectedSnapshot> {
  return { files: await filesOf(workdir).hashes(patterns) };
}

/** Paths whose content changed, vanished, or newly appeared under the globs since the snapshot. */
export async function tamperedFiles(
  workdir: Workdir,
  patterns: readonly string[],
  before: ProtectedSnapshot,
): Promise<string[]> {
  const now = await snapshotProtected(workdir, patterns);
  const all = new Set([...Object.keys(before.files), ...Object.keys(now.files)]);
  return [...all].filter((rel) => (before.files[rel] ?? null) !== (now.files[rel] ?? null)).sort();
}
