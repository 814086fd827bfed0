import { proxyActivities, type ActivityOptions, type RetryPolicy } from '@temporalio/workflow';
import type { createCpuActivities, createGpuActivities } from '../activities/index.js';
import type { RunConfig } from '../config/run.js';
import { nonRetryableFailureTypes } from '../contracts/failures.js';

export const CPU_QUEUE = 'volt-cpu';
export const GPU_QUEUE = 'volt-gpu';

export type Cpu = ReturnType<typeof createCpuActivities>;
type Gpu = ReturnType<typeof createGpuActivities>;

/** Every activity retries with backoff, except on the failure types the one table marks non-retryable. */
export const retryPolicy = (maximumAttempts: number): RetryPolicy => ({
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  maximumAttempts,
  nonRetryableErrorTypes: nonRetryableFailureTypes,
});

/** Short cpu steps (listing tasks, planning, small records): they fail fast. */
export const quickOptions: ActivityOptions = {
  taskQueue: CPU_QUEUE,
  startToCloseTimeout: '2 minutes',
  retry: retryPolicy(5),
};

/** Rollouts, rewards and batches: bounded by heartbeats, so a dead worker is noticed within `heartbeatSec`. */
export const longOptions = (config: RunConfig): ActivityOptions => ({
  taskQueue: CPU_QUEUE,
  startToCloseTimeout: `${config.timeouts.rolloutsSec}s`,
  heartbeatTimeout: `${config.timeouts.heartbeatSec}s`,
  retry: retryPolicy(10),
});

/** Config validation must not depend on the config it validates, so its proxy has fixed options. */
export const validation = proxyActivities<Cpu>({
  taskQueue: CPU_QUEUE,
  startToCloseTimeout: '1 minute',
  retry: retryPolicy(3),
});

/**
 * Activity proxies with deliberate timeouts: short steps fail fast; long steps (rollouts, update) are bounded by
 * heartbeats, so a dead worker is noticed within `heartbeatSec` instead of at the end of a long start-to-close.
 */
export function activitiesFor(config: RunConfig) {
  const heartbeatTimeout = `${config.timeouts.heartbeatSec}s`;
  const quick = proxyActivities<Cpu>(quickOptions);
  const long = proxyActivities<Cpu>(longOptions(config));
  const gpu = proxyActivities<Gpu>({
    taskQueue: GPU_QUEUE,
    startToCloseTimeout: `${config.timeouts.updateSec}s`,
    heartbeatTimeout,
    retry: retryPolicy(5),
  });
  // Serving activities heartbeat too: a gpu worker killed mid-promotion is retried after heartbeatSec, not 5 minutes.
  const serving = proxyActivities<Gpu>({
    taskQueue: GPU_QUEUE,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout,
    retry: retryPolicy(10),
  });
  return {
    listTaskIds: quick.listTaskIds,
    planRun: quick.planRun,
    recordLineageRun: quick.recordLineageRun,
    computeRewards: long.computeRewards,
    buildBatch: long.buildBatch,
    launchRollouts: long.launchRollouts,
    trainPolicy: gpu.trainPolicy,
    servePolicy: serving.servePolicy,
    promoteCheckpoint: serving.promoteCheckpoint,
    rollbackCheckpoint: serving.rollbackCheckpoint,
  };
}
