import type { ApoConfig } from '../config/apo.js';
import type { PromptOverlay } from '../contracts/prompt-overlay.js';
import { proposeDemonstrations } from './bootstrap.js';
import type { OptimizerClient } from './optimizer-client.js';
import type { ChildPlan, ParentPrompt, Proposal } from './proposal.js';
import type { RolloutDigest } from './rollout-digest.js';
import { proposeEdit, selectFailures } from './textual-gradient.js';

export interface SkippedChild {
  version: number;
  parentVersion: number;
  strategy: ChildPlan['strategy'];
  reason: string;
}

export interface ProposedChildren {
  overlays: PromptOverlay[];
  skipped: SkippedChild[];
}

export interface ProposeChildrenInput {
  runId: string;
  seed: number;
  round: number;
  apo: Pick<ApoConfig, 'bootstrap'>;
  parents: readonly ParentPrompt[];
  plans: readonly ChildPlan[];
  /** Every overlay the run has stored: children already among them are returned as they are, the rest dedupe against them. */
  existing: readonly PromptOverlay[];
  /** This round's scored training rollouts as the proposers see them, each with the beam member it ran under. */
  digests: readonly RolloutDigest[];
  parentOfRollout: ReadonlyMap<string, number>;
}

export interface ProposeChildrenDeps {
  /** Write-once overlay storage (storage/prompt-overlays.ts `put`): a child is stored as soon as it exists. */
  saveOverlay(overlay: PromptOverlay): Promise<PromptOverlay>;
  /** Needed only when a textual_gradient child is not stored yet. */
  optimizer: { client: OptimizerClient; failuresPerCritique: number } | null;
}

/** The overlay store's template limit: a longer proposal is skipped rather than failing the round. */
export const MAX_TEMPLATE_CHARS = 100_000;

/** The agent's own system prompt: the one most rollouts sent (ties: the first in text order), null if none sent one. */
export function agentSystemPrompt(digests: readonly RolloutDigest[]): string | null {
  const counts = new Map<string, number>();
  for (const d of digests)
    if (d.agentSystemPrompt !== null) counts.set(d.agentSystemPrompt, (counts.get(d.agentSystemPrompt) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]?.[0] ?? null;
}

/**
 * The children of a beam: bootstrapped demonstrations from successful rollouts and/or textual-gradient edits from
 * the optimiser. A child a strategy cannot offer, or one that renders like a prompt the run already tried, is
 * skipped with its reason, never an error; `onProgress` is told after each child made or skipped.
 */
export async function proposeChildren(
  input: ProposeChildrenInput,
  deps: ProposeChildrenDeps,
  onProgress: (done: number) => void = () => {},
): Promise<ProposedChildren> {
  const { runId, round, apo, seed } = input;
  const planned = new Set(input.plans.map((p) => p.version));
  const stored = new Map(input.existing.filter((o) => planned.has(o.version)).map((o) => [o.version, o]));
  const result: ProposedChildren = { overlays: [], skipped: [] };
  const progress = () => onProgress(result.overlays.length + result.skipped.length);
  const original = agentSystemPrompt(input.digests);

  // A child that renders the same as an existing version would spend validation rollouts on a known score.
  const promptKey = (o: { mode: string; template: string }) => JSON.stringify([o.mode, o.template]);
  const known = new Map<string, number>();
  for (const o of input.existing) if (!known.has(promptKey(o))) known.set(promptKey(o), o.version);
  const skip = (plan: ChildPlan, why: string) => {
    result.skipped.push({
      version: plan.version,
      parentVersion: plan.parentVersion,
      strategy: plan.strategy,
      reason: `v${plan.version} (${plan.strategy} from v${plan.parentVersion}): ${why}`,
    });
    progress();
  };
  const keep = async (plan: ChildPlan, proposal: Proposal) => {
    if (proposal.template.length > MAX_TEMPLATE_CHARS)
      return skip(plan, `template has ${proposal.template.length} characters (limit ${MAX_TEMPLATE_CHARS})`);
    const same = known.get(promptKey(proposal));
    if (same !== undefined) return skip(plan, `same prompt as v${same}`);
    const overlay = await deps.saveOverlay({
      runId,
      version: plan.version,
      mode: proposal.mode,
      template: proposal.template,
      origin: { strategy: plan.strategy, parents: [plan.parentVersion], round, note: proposal.note },
      createdAt: new Date().toISOString(),
    });
    if (!known.has(promptKey(overlay))) known.set(promptKey(overlay), overlay.version);
    result.overlays.push(overlay);
    progress();
  };

  for (const parent of input.parents) {
    const children = input.plans.filter((p) => p.parentVersion === parent.version);
    const bootstrap = children.filter((p) => p.strategy === 'bootstrap');
    // Deterministic from (seed, round, child), so recomputing beside stored siblings gives the same subsets.
    const proposals = bootstrap.some((p) => !stored.has(p.version))
      ? proposeDemonstrations({
          parent,
          digests: input.digests,
          childIndices: bootstrap.map((p) => p.childIndex),
          seed,
          round,
          demonstrations: apo.bootstrap.demonstrations,
          minReward: apo.bootstrap.minReward,
        })
      : [];
    for (const [i, plan] of bootstrap.entries()) {
      const proposal = proposals[i];
      if (stored.has(plan.version)) result.overlays.push(stored.get(plan.version)!);
      else if (proposal) await keep(plan, proposal);
      else
        skip(
          plan,
          proposals.length === 0
            ? `no successful rollouts (reward >= ${apo.bootstrap.minReward})`
            : 'no further distinct set of demonstrations',
        );
    }

    const own = input.digests.filter((d) => input.parentOfRollout.get(d.rolloutId) === parent.version);
    for (const plan of children.filter((p) => p.strategy === 'textual_gradient')) {
      const reused = stored.get(plan.version);
      if (reused) {
        result.overlays.push(reused);
        continue;
      }
      if (!deps.optimizer) throw new Error('bug: no optimiser client for an unstored textual_gradient child');
      const failures = selectFailures(own, apo.bootstrap.minReward, deps.optimizer.failuresPerCritique, {
        seed,
        round,
        childIndex: plan.childIndex,
      });
      if (failures.length === 0) {
        skip(plan, `no failed rollouts (reward < ${apo.bootstrap.minReward}) to critique`);
        continue;
      }
      const outcome = await proposeEdit(deps.optimizer.client, { parent, originalPrompt: original, failures });
      if ('proposal' in outcome) await keep(plan, outcome.proposal);
      else skip(plan, outcome.skipped);
    }
  }
  result.overlays.sort((a, b) => a.version - b.version);
  return result;
}
