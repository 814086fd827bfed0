import { NativeConnection, Worker } from '@temporalio/worker';
import type { ComputeRewardsInput, RewardsSummary } from '../../src/activities/rewards.js';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import type { RunConfig } from '../../src/config/run.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { keys } from '../../src/storage/keys.js';
import { WORKFLOWS_PATH } from '../../src/workers/workers.js';
import { CPU_QUEUE, GPU_QUEUE } from '../../src/workflows/proxies.js';
import type { TestServices } from './services.js';

export interface ScriptedSteps {
  /** The training iteration whose rollouts wait for `release()` (the test acts on the run meanwhile). */
  holdAt: number;
  /** Held-out score of an evaluation (`label` 'base' for the base model's). */
  evalScore: (label: string, iteration: number) => number;
  /** The policy the update of `iteration` returns (a real adapter, made up front). */
  trained: (iteration: number) => PolicyRef;
}

/**
 * FAKE scripted pipeline steps for a real trainingRun workflow: rollouts succeed at once, rewards follow `evalScore`
 * (training 0.5), the batch has 4 samples and the update returns `trained(iteration)`. For tests of what the run does
 * around them (promotion, rollback, serving), with the real activities for that merged in beside these.
 */
export function scriptedSteps(steps: ScriptedSteps) {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  const released = new Promise<void>((r) => (release = r));
  const activities = {
    async launchRollouts(input: LaunchRolloutsInput) {
      if (input.mode === 'train' && input.iteration === steps.holdAt) {
        reach();
        await released;
      }
      const results = input.tasks.flatMap((t) =>
        t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
      );
      return { results };
    },
    async computeRewards(input: ComputeRewardsInput): Promise<RewardsSummary> {
      const meanReward = input.mode === 'eval' ? steps.evalScore(input.label, input.iteration) : 0.5;
      const n = input.results.length;
      const rewardsKey = keys.rewards(input.config.runId, input.iteration);
      return { meanReward, rewardSum: meanReward * n, scored: n, infraFailed: 0, unscored: [], rewardsKey };
    },
    async buildBatch(input: { config: RunConfig; iteration: number }) {
      const { runId } = input.config;
      const [batchKey, manifestKey] = [keys.batch(runId, input.iteration), keys.batchManifest(runId, input.iteration)];
      return { samples: 4, tokens: 100, batchKey, manifestKey, dropReasons: '' };
    },
    async trainPolicy(input: { iteration: number }) {
      return { policy: { ...steps.trained(input.iteration), iteration: input.iteration }, metrics: { loss: 0.1 } };
    },
  };
  return { activities, reached, release };
}

/** A cpu and a gpu worker on the test's Temporal server with these activities; `stop()` shuts both down. */
export async function startScriptedWorkers(services: TestServices, activities: object) {
  const connection = await NativeConnection.connect({ address: services.temporalAddress });
  const common = { connection, namespace: services.namespace, activities };
  const workers = [
    await Worker.create({ ...common, taskQueue: CPU_QUEUE, workflowsPath: WORKFLOWS_PATH }),
    await Worker.create({ ...common, taskQueue: GPU_QUEUE }),
  ];
  const running = Promise.all(workers.map((w) => w.run()));
  return {
    async stop() {
      for (const w of workers) w.shutdown();
      await running;
      await connection.close();
    },
  };
}
