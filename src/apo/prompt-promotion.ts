import type { ApoConfig } from '../config/apo.js';
import type { RunConfig } from '../config/run.js';
import type { PromptOverlay } from '../contracts/prompt-overlay.js';
import type { PromptOverlayStore } from '../storage/prompt-overlays.js';

/** The run config cannot drive prompt optimisation (no apo section, or a setting that leaves nothing to do). */
export class ApoConfigError extends Error {
  override name = 'ApoConfigError';
}

export function apoOf(config: RunConfig): ApoConfig {
  if (!config.apo) throw new ApoConfigError('apo: required for prompt optimisation (volt optimize-prompt)');
  return config.apo;
}

export interface PromotionResult {
  promoted: boolean;
  activeVersion: number;
  activeScore: number | null;
  reason: string;
}

/**
 * The APO split of the training tasks: the LAST apo.validationTasks are the validation set, the rest feed training
 * batches. Throws ApoConfigError when nothing would be left to train on.
 */
export function splitApoTasks(ids: string[], apo: ApoConfig): { trainIds: string[]; validationIds: string[] } {
  if (ids.length <= apo.validationTasks)
    throw new ApoConfigError(
      `apo.validationTasks: ${apo.validationTasks} leaves no training tasks in tasks.trainFile (${ids.length} tasks)`,
    );
  return {
    trainIds: ids.slice(0, ids.length - apo.validationTasks),
    validationIds: ids.slice(ids.length - apo.validationTasks),
  };
}

/** The version the beam starts from: the seed overlay stored write-once as version 1, or 0 (the agent's own). */
export async function storeSeedOverlay(
  overlays: PromptOverlayStore,
  config: RunConfig,
): Promise<{ version: number; overlay: PromptOverlay | null }> {
  const seed = apoOf(config).seed;
  if (!seed) return { version: 0, overlay: null };
  const overlay = await overlays.put({
    runId: config.runId,
    version: 1,
    mode: seed.mode,
    template: seed.template,
    origin: { strategy: 'seed', parents: [0], round: null, note: 'seed overlay from the run config (apo.seed)' },
    createdAt: new Date().toISOString(),
  });
  return { version: 1, overlay };
}

/**
 * Promotion: `version` becomes the run's active prompt only if its full-validation score beats the current active
 * prompt's (none yet: the agent's own prompt, `baselineScore`) by more than apo.promoteMargin.
 * Idempotent: a retry after the write finds the version already active.
 */
export async function promoteBestPrompt(
  overlays: PromptOverlayStore,
  input: { config: RunConfig; version: number; score: number; baselineScore: number },
): Promise<PromotionResult> {
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
}
