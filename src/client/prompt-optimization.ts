import type { Client, WorkflowHandle } from '@temporalio/client';
import type { RunConfig } from '../config/run.js';
import { apoStatusQuery, type ApoStatus } from '../workflows/prompt-optimization-types.js';
import { startOrAttach, type RunLinks } from './runs.js';

/** A config for prompt optimisation must carry the `apo` section; said at the edge, before anything starts. */
export function assertApoConfig(config: RunConfig, file: string): void {
  if (!config.apo) throw new Error(`${file}: apo: required for prompt optimisation (see examples/calculator/apo.json)`);
}

/** Start (or attach to) the promptOptimization run: workflow id = run id, a used run id is never started again. */
export function startPromptOptimization(
  client: Client,
  config: RunConfig,
  links: RunLinks = {},
): Promise<{ handle: WorkflowHandle; started: boolean }> {
  const apo = config.apo!;
  return startOrAttach(
    client,
    'promptOptimization',
    config,
    `prompt optimisation ${config.runId}: ${apo.rounds} rounds, beam ${apo.beamWidth}, ${apo.strategies.join(' + ')}`,
    links,
  );
}

export const isApoStatus = (s: unknown): s is ApoStatus =>
  (s as { kind?: unknown } | null)?.kind === 'promptOptimization';

export const queryApoStatus = (client: Client, runId: string): Promise<ApoStatus> =>
  client.workflow.getHandle(runId).query(apoStatusQuery);

/** Lines describing an APO run's status (shared by `optimize-prompt --follow` and `run-status`). */
export function apoStatusLines(s: ApoStatus): string[] {
  const f = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toFixed(3));
  const lines = [
    `prompt optimisation ${s.runId}: round ${s.round}/${s.rounds}, phase ${s.phase}${s.paused ? ' (paused)' : ''}, beam [${s.beam.join(', ')}]`,
    `validation: agent's own prompt ${f(s.baselineScore)}, best ${s.best ? `v${s.best.version} ${f(s.best.score)}` : '-'}`,
  ];
  for (const r of s.history) {
    const cands = r.candidates.map((c) => `v${c.version} ${f(c.score)}`).join(', ');
    lines.push(
      `  round ${r.round}: train reward ${f(r.trainMeanReward)}, children [${r.children.join(', ')}]${r.skipped.length ? ` (${r.skipped.length} skipped)` : ''}; batch ${cands}; leader v${r.leader.version} ${f(r.leader.score)}`,
    );
  }
  if (s.promotion)
    lines.push(
      `promotion: ${s.promotion.promoted ? 'promoted' : 'not promoted'}, active v${s.promotion.activeVersion} — ${s.promotion.reason}`,
    );
  lines.push(
    `held-out: before ${f(s.heldOut.before)}, after ${f(s.heldOut.after)}${s.heldOut.afterVersion === null ? '' : ` (v${s.heldOut.afterVersion})`}`,
  );
  return lines;
}

/** Poll the run's status until it closes, printing what changed. */
export async function followPromptOptimization(
  client: Client,
  runId: string,
  write: (line: string) => void,
  intervalMs = 5000,
): Promise<ApoStatus> {
  const handle = client.workflow.getHandle(runId);
  let done = false;
  const result = handle
    .result()
    .then((r: ApoStatus) => r)
    .finally(() => (done = true));
  let last = '';
  while (!done) {
    const s = await queryApoStatus(client, runId).catch(() => null);
    const line = s
      ? `round ${s.round}/${s.rounds} ${s.phase} best ${s.best ? `v${s.best.version} ${s.best.score.toFixed(3)}` : '-'}`
      : '';
    if (line && line !== last) write((last = line));
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, intervalMs))]);
  }
  return result;
}
