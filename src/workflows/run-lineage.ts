import { upsertSearchAttributes } from '@temporalio/workflow';
import { LineageKey } from './definitions.js';
import { activitiesFor } from './proxies.js';
import { setRunDetails } from './run-details.js';
import { finishRun, type RunContext } from './run-context.js';
import type { RunLineage, RunStatus } from './types.js';

/** A lineage run's plan: where it starts and what it must beat; noNewTasks when its task source had nothing new. */
export interface LineagePlan {
  lineage: RunLineage;
  noNewTasks: boolean;
}

/** Runs that start from a stored policy, belong to a lineage or take tasks from a source plan that first; null for others. */
export async function planLineage(run: RunContext): Promise<LineagePlan | null> {
  const { lineage, model, tasks } = run.config;
  if (!lineage && !model.startFrom && !tasks.trainPrefix) return null;
  setRunDetails(
    run.config.runId,
    tasks.trainPrefix ? `taking new tasks from ${tasks.trainPrefix}` : 'resolving the start policy',
  );
  const plan = await activitiesFor(run.config).planRun({ config: run.config });
  run.config = plan.config;
  if (run.config.lineage) upsertSearchAttributes([{ key: LineageKey, value: run.config.lineage }]);
  return {
    noNewTasks: plan.noNewTasks,
    lineage: {
      name: run.config.lineage ?? null,
      startedFrom: plan.startFrom,
      incumbent: plan.incumbent,
      incumbentScore: null,
      alias: run.config.deploy?.alias ?? null,
      ...(plan.intake ?? { newTasks: [], replayTasks: [], taskFiles: [] }),
    },
  };
}

/** Not a failure: the night had nothing to learn from, and the lineage keeps its policy. */
export async function endWithoutNewTasks(run: RunContext, lineage: RunLineage): Promise<RunStatus> {
  run.outcome = 'no-new-tasks';
  run.state = {
    iteration: run.config.iterations,
    policy: lineage.startedFrom,
    best: { policy: lineage.incumbent, score: 0 },
    baseEval: null,
    history: [],
    promotions: [],
    bestIteration: null,
    lineage,
  };
  await recordLineage(run);
  setRunDetails(
    run.config.runId,
    `no new tasks under ${run.config.tasks.trainPrefix} since the lineage's previous run; nothing trained`,
  );
  return finishRun(run);
}

/** A lineage's record of this run: what it started from, what it promoted (if anything) and the tasks it took. */
export async function recordLineage(run: RunContext): Promise<void> {
  const l = run.state?.lineage;
  if (!l?.name) return;
  const best = run.state!.best.policy;
  const promoted = run.outcome === 'trained' && best.sha256 !== l.incumbent.sha256 ? best : null;
  await activitiesFor(run.config).recordLineageRun({
    lineage: l.name,
    run: {
      runId: run.config.runId,
      startedFrom: l.startedFrom,
      incumbent: l.incumbent,
      incumbentScore: l.incumbentScore,
      promoted,
      outcome: run.outcome === 'no-new-tasks' ? 'no-new-tasks' : promoted ? 'promoted' : 'kept',
      trainSet: run.outcome === 'no-new-tasks' ? null : (run.config.tasks.trainSet ?? null),
      newTasks: l.newTasks.length,
      replayTasks: l.replayTasks.length,
      taskFiles: l.taskFiles,
    },
  });
}
