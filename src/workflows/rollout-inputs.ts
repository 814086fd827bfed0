import type { RunConfig } from '../config/run.js';

/** The run's pinned task sets: validateRunConfig fills in their hashes, and the task activities reject a null one. */
export const trainSetOf = (config: RunConfig): string | null => config.tasks.trainSet ?? null;
export const evalSetOf = (config: RunConfig): string | null => config.tasks.evalSet ?? null;

/** Sampling the gateway imposes when scoring a prompt or a policy: eval.temperature (greedy by default), or the agent's own. */
export const scoringSampling = (config: RunConfig): { temperature: number } | null =>
  config.eval.temperature !== null ? { temperature: config.eval.temperature } : null;
