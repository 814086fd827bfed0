import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { glob, isDynamicPattern } from 'tinyglobby';

/** What file-reading rewards see of a rollout's workdir: a local directory, or the listing a Kubernetes pod reported. */
export interface WorkdirFiles {
  /** sha256 of each regular file the globs cover; literal paths are kept (null when absent), so creating one is caught. */
  hashes(patterns: readonly string[]): Promise<Record<string, string | null>>;
  /** A file's text, or null when it is absent (or was not reported). */
  read(rel: string): Promise<string | null>;
}

const literals = (patterns: readonly string[]) =>
  patterns.filter((p) => !isDynamicPattern(p)).map((p) => path.posix.normalize(p));

async function sha256(file: string): Promise<string | null> {
  try {
    return createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** The workdir on this host. */
export function localFiles(workdir: string): WorkdirFiles {
  return {
    async hashes(patterns) {
      const found = await glob([...patterns], {
        cwd: workdir,
        dot: true,
        onlyFiles: true,
        followSymbolicLinks: false,
        expandDirectories: false,
      });
      const files: Record<string, string | null> = {};
      for (const rel of [...new Set([...found, ...literals(patterns)])].sort())
        files[rel] = await sha256(path.join(workdir, rel));
      return files;
    },
    read: (rel) => readFile(path.join(workdir, rel), 'utf8').catch(() => null),
  };
}

/** A workdir known only by its files' hashes and a few texts (reported by the pod's own steps). */
export function listedFiles(hashes: ReadonlyMap<string, string>, texts: ReadonlyMap<string, string>): WorkdirFiles {
  return {
    hashes(patterns) {
      const matches = picomatch([...patterns], { dot: true });
      const covered = [...new Set([...[...hashes.keys()].filter((rel) => matches(rel)), ...literals(patterns)])].sort();
      return Promise.resolve(Object.fromEntries(covered.map((rel) => [rel, hashes.get(rel) ?? null])));
    },
    read: (rel) => Promise.resolve(texts.get(rel) ?? null),
  };
}
