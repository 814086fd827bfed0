import type { RunConfig } from '../config/run.js';
import type { RolloutRef } from '../contracts/rollout.js';
import type { ObjectStore } from '../storage/object-store.js';
import type { PromptOverlayStore } from '../storage/prompt-overlays.js';
import type { PinnedTaskSets } from '../tasks/pinned-task-sets.js';
import { createOptimizerClient } from './optimizer-client.js';
import { apoOf, ApoConfigError } from './prompt-promotion.js';
import { proposeChildren, type ProposedChildren, type ProposeChildrenDeps } from './propose-children.js';
import { planChildren, type ParentPrompt } from './proposal.js';
import { loadRolloutDigests } from './rollout-digest.js';

export interface ProposeOverlaysInput {
  config: RunConfig;
  round: number;
  parents: ParentPrompt[];
  /** This round's scored training rollouts, each with the beam member it ran under. */
  rollouts: { ref: RolloutRef; taskId: string; reward: number; parentVersion: number }[];
  /** Versions to allocate, in order: parent-major blocks, strategies alternating within a block (see planChildren). */
  versions: number[];
}

export interface ProposeOverlaysDeps {
  store: ObjectStore;
  taskSets: Pick<PinnedTaskSets, 'load'>;
  overlays: PromptOverlayStore;
}

/**
 * Propose the children of this round's beam (propose-children.ts). Idempotent: a version already stored is returned
 * as is without asking the optimiser again; each child is stored (write-once) as soon as it exists, so a retry after
 * an optimiser outage resumes where it stopped. Throws ApoConfigError when the config cannot propose them.
 */
export async function proposeOverlays(
  input: ProposeOverlaysInput,
  deps: ProposeOverlaysDeps,
  onProgress: (done: number, total: number) => void,
): Promise<ProposedChildren> {
  const { config, round } = input;
  const apo = apoOf(config);
  const plans = planChildren(input.parents, input.versions, apo.strategies);
  // One listing serves both: the children a retried call already stored, and every prompt the run has tried.
  const existing = await deps.overlays.list(config.runId);
  const missing = plans.filter((p) => !existing.some((o) => o.version === p.version));
  const digests =
    missing.length > 0
      ? await loadRolloutDigests(deps.store, input.rollouts, (await deps.taskSets.load(config.tasks.trainSet)).byId)
      : [];
  // Fail fast on a missing optimiser or key, before any child is written.
  let optimizer: ProposeChildrenDeps['optimizer'] = null;
  if (missing.some((p) => p.strategy === 'textual_gradient')) {
    if (!apo.optimizer) throw new ApoConfigError('apo.optimizer: required by the textual_gradient strategy');
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
    { saveOverlay: (overlay) => deps.overlays.put(overlay), optimizer },
    (done) => onProgress(done, plans.length),
  );
}
