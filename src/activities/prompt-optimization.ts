import { ApplicationFailure } from '@temporalio/activity';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { PromptOverlay } from '../contracts/prompt-overlay.js';
import { createPromptOverlayStore } from '../storage/prompt-overlays.js';
import { requireTaskSet } from './config.js';
import type { ActivityDeps } from './deps.js';
import { rewardsKeyFor } from './rewards.js';
import { rewardsFileSchema } from '../contracts/rewards.js';

export interface ScoredRollout {
  rolloutId: string;
  attempt: number;
  taskId: string;
  groupId: string;
  reward: number;
}

export interface PromotionResult {
  promoted: boolean;
  activeVersion: number;
  activeScore: number | null;
  reason: string;
}

function apoOf(config: RunConfig): NonNullable<RunConfig['apo']> {
  if (!config.apo) {
    throw ApplicationFailure.create({
      type: FailureType.InvalidConfig,
      message: 'apo: required for prompt optimisation (volt optimize-prompt)',
      nonRetryable: true,
    });
  }
  return config.apo;
}

export const createPromptOptimizationActivities = (deps: Pick<ActivityDeps, 'store' | 'taskSets'>) => {
  const overlays = createPromptOverlayStore(deps.store);
  return {
    /**
     * The APO split of tasks.trainFile: the LAST apo.validationTasks tasks are the validation set, the rest feed
     * training batches. Fails non-retryably when nothing would be left to train on.
     */
    async splitApoTasks(input: { config: RunConfig }): Promise<{ trainIds: string[]; validationIds: string[] }> {
      const apo = apoOf(input.config);
      const { tasks } = await deps.taskSets.load(requireTaskSet(input.config.tasks.trainSet));
      if (tasks.length <= apo.validationTasks) {
        throw ApplicationFailure.create({
          type: FailureType.InvalidConfig,
          message: `apo.validationTasks: ${apo.validationTasks} leaves no training tasks in tasks.trainFile (${tasks.length} tasks)`,
          nonRetryable: true,
        });
      }
      const ids = tasks.map((t) => t.id);
      return {
        trainIds: ids.slice(0, ids.length - apo.validationTasks),
        validationIds: ids.slice(ids.length - apo.validationTasks),
      };
    },

    /** The version the beam starts from: the seed overlay stored write-once as version 1, or 0 (the agent's own). */
    async storeSeedOverlay(input: { config: RunConfig }): Promise<{ version: number; overlay: PromptOverlay | null }> {
      const seed = apoOf(input.config).seed;
      if (!seed) return { version: 0, overlay: null };
      const overlay = await overlays.put({
        runId: input.config.runId,
        version: 1,
        mode: seed.mode,
        template: seed.template,
        origin: { strategy: 'seed', parents: [0], round: null, note: 'seed overlay from the run config (apo.seed)' },
        createdAt: new Date().toISOString(),
      });
      return { version: 1, overlay };
    },

    /** Per-rollout rewards of one rewards file (infra failures left out), so proposers see which rollouts worked. */
    async scoredRollouts(input: {
      config: RunConfig;
      iteration: number;
      mode: 'train' | 'eval';
      label: string;
    }): Promise<ScoredRollout[]> {
      const file = await deps.store.getJson(
        rewardsKeyFor(input.config, input.iteration, input.mode, input.label),
        rewardsFileSchema,
      );
      return file.rollouts.flatMap((r) =>
        r.reward === null
          ? []
          : [{ rolloutId: r.rolloutId, attempt: r.attempt, taskId: r.taskId, groupId: r.groupId, reward: r.reward }],
      );
    },

    /**
     * Promotion: `version` becomes the run's active prompt only if its full-validation score beats the current
     * active prompt's (none yet: the agent's own prompt, `baselineScore`) by more than apo.promoteMargin.
     * Idempotent: a retry after the write finds the version already active.
     */
    async promoteBestPrompt(input: {
      config: RunConfig;
      version: number;
      score: number;
      baselineScore: number;
    }): Promise<PromotionResult> {
      const { config, version, score, baselineScore } = input;
      const margin = apoOf(config).promoteMargin;
      const active = await overlays.getActive(config.runId);
      if (active && active.version === version) {
        return {
          promoted: version !== 0,
          activeVersion: version,
          activeScore: active.score,
          reason: `version ${version} is already the active prompt`,
        };
      }
      const current = active
        ? { version: active.version, score: active.score ?? baselineScore }
        : { version: 0, score: baselineScore };
      if (version === current.version || !(score > current.score + margin)) {
        return {
          promoted: false,
          activeVersion: current.version,
          activeScore: current.score,
          reason: `best version ${version} scored ${score.toFixed(3)}, not above version ${current.version}'s ${current.score.toFixed(3)} + margin ${margin}`,
        };
      }
      const promoted = await overlays.promote(config.runId, version, score);
      return {
        promoted: true,
        activeVersion: promoted.version,
        activeScore: promoted.score,
        reason: `version ${version} scored ${score.toFixed(3)} > version ${current.version}'s ${current.score.toFixed(3)} + margin ${margin}`,
      };
    },
  };
};
