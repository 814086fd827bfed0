import { ApplicationFailure, Context } from '@temporalio/activity';
import { proposeDemonstrations } from '../apo/bootstrap.js';
import { createOptimizerClient, type OptimizerClient } from '../apo/optimizer-client.js';
import { planChildren, type ChildPlan, type ParentPrompt, type Proposal } from '../apo/proposal.js';
import { loadRolloutDigests, type RolloutDigest } from '../apo/rollout-digest.js';
import { proposeEdit, selectFailures } from '../apo/textual-gradient.js';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { PromptOverlay } from '../contracts/prompt-overlay.js';
import type { Task } from '../contracts/task.js';
import { createPromptOverlayStore } from '../storage/prompt-overlays.js';
import { TaskSetError } from '../contracts/task.js';
import { requireTaskSet } from './config.js';
import type { ActivityDeps } from './deps.js';
import type { RolloutRef } from '../contracts/rollout.js';

export interface ProposeOverlaysInput {
  config: RunConfig;
  round: number;
  parents: ParentPrompt[];
  /** This round's scored training rollouts, each with the beam member it ran under. */
  rollouts: { ref: RolloutRef; taskId: string; reward: number; parentVersion: number }[];
  /** Versions to allocate, in order: parent-major blocks, strategies alternating within a block (see planChildren). */
  versions: number[];
}

export interface SkippedChild {
  version: number;
  parentVersion: number;
  strategy: ChildPlan['strategy'];
  reason: string;
}

export interface ProposeOverlaysResult {
  overlays: PromptOverlay[];
  skipped: SkippedChild[];
}

/** The overlay store's template limit: a longer proposal is skipped rather than failing the round. */
const MAX_TEMPLATE_CHARS = 100_000;

const invalidConfig = (message: string) => ApplicationFailure.create({ type: FailureType.InvalidConfig, message, nonRetryable: true });

/** The agent's own system prompt: the one most rollouts sent (ties: the first in text order), null if none sent one. */
function agentSystemPrompt(digests: readonly RolloutDigest[]): string | null {
  const counts = new Map<string, number>();
  for (const d of digests) if (d.agentSystemPrompt !== null) counts.set(d.agentSystemPrompt, (counts.get(d.agentSystemPrompt) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]?.[0] ?? null;
}

async function trainTasks(deps: Pick<ActivityDeps, 'taskSets'>, taskSet: string | undefined): Promise<Map<string, Task>> {
  try {
    return (await deps.taskSets.load(requireTaskSet(taskSet))).byId;
  } catch (err) {
    if (err instanceof TaskSetError) {
      throw ApplicationFailure.create({ type: FailureType.InvalidTaskSet, message: (err as Error).message, nonRetryable: true });
    }
    throw err;
  }
}

export const createPromptProposalActivities = (deps: Pick<ActivityDeps, 'store' | 'taskSets'>) => {
  const overlayStore = createPromptOverlayStore(deps.store);
  return {
    /**
     * Propose the children of this round's beam: bootstrapped demonstrations from successful rollouts and/or
     * textual-gradient edits from an optimiser LLM. Idempotent: a version already stored is returned as is without
     * asking the optimiser again; each child is stored (write-once) as soon as it exists, so a retry after an
     * optimiser outage resumes where it stopped. A child a strategy cannot offer is skipped, never an error.
     */
    async proposeOverlays(input: ProposeOverlaysInput): Promise<ProposeOverlaysResult> {
      const { config, round } = input;
      const apo = config.apo;
      if (!apo) throw invalidConfig('apo: required for prompt optimisation (volt optimize-prompt)');
      const runId = config.runId;
      const plans = planChildren(input.parents, input.versions, apo.strategies);
      const result: ProposeOverlaysResult = { overlays: [], skipped: [] };
      const heartbeat = () => Context.current().heartbeat({ done: result.overlays.length + result.skipped.length, total: plans.length });

      // One listing serves both: the children a retried call already stored, and every prompt the run has tried.
      const existing = await overlayStore.list(runId);
      const planned = new Set(plans.map((p) => p.version));
      const stored = new Map(existing.filter((o) => planned.has(o.version)).map((o) => [o.version, o]));
      let digests: RolloutDigest[] = [];
      if (stored.size < plans.length) digests = await loadRolloutDigests(deps.store, input.rollouts, await trainTasks(deps, config.tasks.trainSet));
      const parentOfRollout = new Map(input.rollouts.map((r) => [r.ref.rolloutId, r.parentVersion]));
      const original = agentSystemPrompt(digests);
      // Fail fast on a missing optimiser or key, before any child is written.
      let optimizer: { client: OptimizerClient; failuresPerCritique: number } | null = null;
      if (plans.some((p) => p.strategy === 'textual_gradient' && !stored.has(p.version))) {
        if (!apo.optimizer) throw invalidConfig('apo.optimizer: required by the textual_gradient strategy');
        optimizer = { client: createOptimizerClient(apo.optimizer), failuresPerCritique: apo.optimizer.failuresPerCritique };
      }

      // A child that renders the same as an existing version would spend validation rollouts on a known score.
      const promptKey = (o: { mode: string; template: string }) => JSON.stringify([o.mode, o.template]);
      const known = new Map<string, number>();
      for (const o of existing) if (!known.has(promptKey(o))) known.set(promptKey(o), o.version);
      const keep = async (plan: ChildPlan, proposal: Proposal) => {
        if (proposal.template.length > MAX_TEMPLATE_CHARS) return skip(plan, `template has ${proposal.template.length} characters (limit ${MAX_TEMPLATE_CHARS})`);
        const same = known.get(promptKey(proposal));
        if (same !== undefined) return skip(plan, `same prompt as v${same}`);
        const overlay = await overlayStore.put({
          runId, version: plan.version, mode: proposal.mode, template: proposal.template,
          origin: { strategy: plan.strategy, parents: [plan.parentVersion], round, note: proposal.note },
          createdAt: new Date().toISOString(),
        });
        if (!known.has(promptKey(overlay))) known.set(promptKey(overlay), overlay.version);
        result.overlays.push(overlay);
        heartbeat();
      };
      const skip = (plan: ChildPlan, why: string) => {
        result.skipped.push({ version: plan.version, parentVersion: plan.parentVersion, strategy: plan.strategy, reason: `v${plan.version} (${plan.strategy} from v${plan.parentVersion}): ${why}` });
        heartbeat();
      };

      for (const parent of input.parents) {
        const children = plans.filter((p) => p.parentVersion === parent.version);
        const bootstrap = children.filter((p) => p.strategy === 'bootstrap');
        // Deterministic from (seed, round, child), so recomputing beside stored siblings gives the same subsets.
        const proposals = bootstrap.some((p) => !stored.has(p.version)) ? proposeDemonstrations({
          parent, digests, childIndices: bootstrap.map((p) => p.childIndex), seed: config.seed, round,
          demonstrations: apo.bootstrap.demonstrations, minReward: apo.bootstrap.minReward,
        }) : [];
        for (const [i, plan] of bootstrap.entries()) {
          const proposal = proposals[i];
          if (stored.has(plan.version)) result.overlays.push(stored.get(plan.version)!);
          else if (proposal) await keep(plan, proposal);
          else skip(plan, proposals.length === 0 ? `no successful rollouts (reward >= ${apo.bootstrap.minReward})` : 'no further distinct set of demonstrations');
        }

        const own = digests.filter((d) => parentOfRollout.get(d.rolloutId) === parent.version);
        for (const plan of children.filter((p) => p.strategy === 'textual_gradient')) {
          const reused = stored.get(plan.version);
          if (reused) {
            result.overlays.push(reused);
            continue;
          }
          if (!optimizer) throw new Error('bug: no optimiser client for an unstored textual_gradient child');
          const failures = selectFailures(own, apo.bootstrap.minReward, optimizer.failuresPerCritique, { seed: config.seed, round, childIndex: plan.childIndex });
          if (failures.length === 0) {
            skip(plan, `no failed rollouts (reward < ${apo.bootstrap.minReward}) to critique`);
            continue;
          }
          const outcome = await proposeEdit(optimizer.client, { parent, originalPrompt: original, failures });
          if ('proposal' in outcome) await keep(plan, outcome.proposal);
          else skip(plan, outcome.skipped);
        }
      }
      result.overlays.sort((a, b) => a.version - b.version);
      return result;
    },
  };
};
