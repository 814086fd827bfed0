import { ApplicationFailure, Context } from '@temporalio/activity';
import { createOptimizerClient } from '../apo/optimizer-client.js';
import { proposeChildren, type ProposedChildren, type ProposeChildrenDeps } from '../apo/propose-children.js';
import { planChildren, type ParentPrompt } from '../apo/proposal.js';
import { loadRolloutDigests } from '../apo/rollout-digest.js';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { RolloutRef } from '../contracts/rollout.js';
import { TaskSetError, type Task } from '../contracts/task.js';
import { createPromptOverlayStore } from '../storage/prompt-overlays.js';
import { requireTaskSet } from './config.js';
import type { ActivityDeps } from './deps.js';

export interface ProposeOverlaysInput {
  config: RunConfig;
  round: number;
  parents: ParentPrompt[];
  /** This round's scored training rollouts, each with the beam member it ran under. */
  rollouts: { ref: RolloutRef; taskId: string; reward: number; parentVersion: number }[];
  /** Versions to allocate, in order: parent-major blocks, strategies alternating within a block (see planChildren). */
  versions: number[];
}

export type ProposeOverlaysResult = ProposedChildren;

const invalidConfig = (message: string) =>
  ApplicationFailure.create({ type: FailureType.InvalidConfig, message, nonRetryable: true });

async function trainTasks(
  deps: Pick<ActivityDeps, 'taskSets'>,
  taskSet: string | undefined,
): Promise<Map<string, Task>> {
  try {
    return (await deps.taskSets.load(requireTaskSet(taskSet))).byId;
  } catch (err) {
    if (err instanceof TaskSetError) {
      throw ApplicationFailure.create({
        type: FailureType.InvalidTaskSet,
        message: (err as Error).message,
        nonRetryable: true,
      });
    }
    throw err;
  }
}

export const createPromptProposalActivities = (deps: Pick<ActivityDeps, 'store' | 'taskSets'>) => {
  const overlayStore = createPromptOverlayStore(deps.store);
  return {
    /**
     * Propose the children of this round's beam (src/apo/propose-children.ts). Idempotent: a version already stored
     * is returned as is without asking the optimiser again; each child is stored (write-once) as soon as it exists,
     * so a retry after an optimiser outage resumes where it stopped.
     */
    async proposeOverlays(input: ProposeOverlaysInput): Promise<ProposeOverlaysResult> {
      const { config, round } = input;
      const apo = config.apo;
      if (!apo) throw invalidConfig('apo: required for prompt optimisation (volt optimize-prompt)');
      const plans = planChildren(input.parents, input.versions, apo.strategies);
      // One listing serves both: the children a retried call already stored, and every prompt the run has tried.
      const existing = await overlayStore.list(config.runId);
      const missing = plans.filter((p) => !existing.some((o) => o.version === p.version));
      const digests =
        missing.length > 0
          ? await loadRolloutDigests(deps.store, input.rollouts, await trainTasks(deps, config.tasks.trainSet))
          : [];
      // Fail fast on a missing optimiser or key, before any child is written.
      let optimizer: ProposeChildrenDeps['optimizer'] = null;
      if (missing.some((p) => p.strategy === 'textual_gradient')) {
        if (!apo.optimizer) throw invalidConfig('apo.optimizer: required by the textual_gradient strategy');
        optimizer = {
          client: createOptimizerClient(apo.optimizer),
          failuresPerCritique: apo.optimizer.failuresPerCritique,
        };
      }
      return proposeChildren(
        {
          runId: config.runId,
          seed: config.seed,
          round,
          apo,
          parents: input.parents,
          plans,
          existing,
          digests,
          parentOfRollout: new Map(input.rollouts.map((r) => [r.ref.rolloutId, r.parentVersion])),
        },
        { saveOverlay: (overlay) => overlayStore.put(overlay), optimizer },
        (done) => Context.current().heartbeat({ done, total: plans.length }),
      );
    },
  };
};
