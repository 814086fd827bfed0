import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { RunStatus } from '../workflows/types.js';
import { queryStatus } from './runs.js';

export interface RolloutProgress {
  done: number;
  total: number;
}

/** The workflow whose activities run right now, derived from the run's phase (ids are deterministic). */
function activeWorkflowId(s: RunStatus): string | null {
  if (s.phase === 'evaluating-base') return `${s.runId}-eval-base`;
  if (s.phase === 'evaluating') return `${s.runId}-iter-${s.iteration}-eval`;
  if (s.phase === 'rollouts' || s.phase === 'rewards') return `${s.runId}-iter-${s.iteration}`;
  return null;
}

/** Rollouts done/total from the heartbeat details of the pending rollout activity, when one runs. */
export async function rolloutProgress(client: Client, s: RunStatus): Promise<RolloutProgress | null> {
  const id = activeWorkflowId(s);
  if (!id) return null;
  try {
    const d = await client.workflow.getHandle(id).describe();
    for (const a of d.raw.pendingActivities ?? []) {
      const payload = a.heartbeatDetails?.payloads?.[0];
      if (a.activityType?.name !== 'launchRollouts' || !payload) continue;
      const details = defaultPayloadConverter.fromPayload(payload) as Partial<RolloutProgress>;
      if (typeof details.done === 'number' && typeof details.total === 'number')
        return { done: details.done, total: details.total };
    }
  } catch {
    // The child may not exist yet or has just closed: no progress to show this time.
  }
  return null;
}

const bar = (done: number, total: number, width = 20) => {
  const filled = total > 0 ? Math.round((done / total) * width) : 0;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`;
};

/** One line: iteration, phase, rollouts, mean reward, eval score, best. */
export function progressLine(s: RunStatus, rollouts: RolloutProgress | null): string {
  const last = s.history.at(-1);
  const parts = [
    `iter ${Math.min(s.iteration + (s.phase === 'done' ? 0 : 1), s.iterations)}/${s.iterations}`,
    s.phase.padEnd(15),
    rollouts ? `rollouts ${bar(rollouts.done, rollouts.total)}` : '',
    last ? `reward ${last.meanReward.toFixed(3)}` : '',
    last?.evalScore != null ? `eval ${last.evalScore.toFixed(3)}` : '',
    s.best ? `best ${s.best.score.toFixed(3)}` : '',
  ];
  return parts.filter(Boolean).join('  ');
}

/** Poll the run's status until it closes, printing a progress line (redrawn in place on a terminal). */
export async function followRun(
  client: Client,
  runId: string,
  write: (text: string) => void,
  tty: boolean,
  intervalMs = 2000,
): Promise<RunStatus> {
  let lastLine = '';
  const handle = client.workflow.getHandle(runId);
  const result = handle.result().then((r: RunStatus) => r);
  let finished = false;
  void result.then(
    () => (finished = true),
    () => (finished = true),
  );
  while (!finished) {
    try {
      const s = await queryStatus(client, runId);
      const line = progressLine(s, await rolloutProgress(client, s));
      if (line !== lastLine) write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
      lastLine = line;
    } catch {
      // Between continue-as-new runs the query can miss; the next poll answers.
    }
    await Promise.race([new Promise((r) => setTimeout(r, intervalMs)), result.catch(() => undefined)]);
  }
  if (tty) write('\n');
  return result;
}
