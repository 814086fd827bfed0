import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import { parseRunConfig, type RunConfig } from '../../src/config/run.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { DASHBOARD_MEMO, pauseSignal, resumeSignal, statusQuery } from '../../src/workflows/definitions.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { startWorkflowEnv, withStubWorkers, type CpuStubs, type GpuStubs } from './workflow-env.js';

type Env = Awaited<ReturnType<typeof startWorkflowEnv>>;

const TASKS = ['t0', 't1', 't2', 't3', 't4', 't5'];

function runConfig(
  runId: string,
  over: { iterations: number; promoteMargin: number; continueAsNewEvery?: number },
): RunConfig {
  return parseRunConfig({
    runId,
    seed: 3,
    iterations: over.iterations,
    continueAsNewEvery: over.continueAsNewEvery ?? 10,
    agent: { command: ['agent'] },
    tasks: { trainFile: 'train.jsonl', evalFile: 'eval.jsonl' },
    rollouts: { groupSize: 2, tasksPerIteration: 2 },
    reward: { kind: 'string_match', source: 'output_file' },
    eval: { tasks: 3, everyIterations: 1, promoteMargin: over.promoteMargin },
  }) as RunConfig;
}

/**
 * Stub activities that record every call and score each policy on the held-out tasks from a table: the
 * workflows' rules (promotion, on-policy sampling, pause) are what is under test, not the activities.
 */
function stubs(evalScores: Record<string, number>, opts: { holdTrainRollouts?: Promise<void> } = {}) {
  const calls = {
    launched: [] as LaunchRolloutsInput[],
    served: [] as string[],
    promoted: [] as { name: string; score: number }[],
    trained: [] as { iteration: number; from: string }[],
  };
  const scoreOf = new Map<string, number>();
  const cpu: CpuStubs = {
    // As the real one does, the validated config pins the task sets by hash.
    validateRunConfig: async (raw) => {
      const c = parseRunConfig(raw) as RunConfig;
      return { ...c, tasks: { ...c.tasks, trainSet: 'a'.repeat(64), evalSet: 'b'.repeat(64) } };
    },
    listTaskIds: async ({ taskSet, limit }) =>
      (taskSet === 'b'.repeat(64) ? ['e0', 'e1', 'e2'] : TASKS).slice(0, limit),
    launchRollouts: async (input) => {
      calls.launched.push(input);
      if (input.mode === 'train' && opts.holdTrainRollouts) await opts.holdTrainRollouts;
      const results = input.tasks.flatMap((t) =>
        t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
      );
      if (input.mode === 'eval') scoreOf.set(`${input.iteration}/${input.label}`, evalScores[input.policy.name] ?? 0);
      return { results };
    },
    computeRewards: async (input) => {
      const meanReward = input.mode === 'eval' ? scoreOf.get(`${input.iteration}/${input.label}`)! : 0.25;
      const scored = input.results.length;
      return {
        meanReward,
        rewardSum: meanReward * scored,
        scored,
        infraFailed: 0,
        unscored: [],
        rewardsKey: `rewards/${input.iteration}/${input.label}`,
      };
    },
    buildBatch: async ({ iteration }) => ({
      samples: 4,
      tokens: 100,
      batchKey: `batch/${iteration}`,
      manifestKey: `manifest/${iteration}`,
      dropReasons: '',
    }),
  };
  const gpu: GpuStubs = {
    servePolicy: async ({ policy }) => void calls.served.push(policy.name),
    trainPolicy: async ({ iteration, policy }) => {
      calls.trained.push({ iteration, from: policy.name });
      const trained: PolicyRef = {
        name: `cand-${iteration}`,
        checkpointKey: `ckpt/${iteration}`,
        sha256: `sha-${iteration}`,
        iteration,
      };
      return { policy: trained, metrics: { loss: 0.5 } };
    },
    promoteCheckpoint: async ({ policy, score }) => void calls.promoted.push({ name: policy.name, score }),
  };
  return { cpu, gpu, calls };
}

void describe('trainingRun / trainingIteration with stub activities (TestWorkflowEnvironment)', () => {
  let env: Env;
  before(async () => (env = await startWorkflowEnv()));
  after(() => env?.env.teardown());

  void it(
    'promotes a candidate only when it beats the best by more than promoteMargin, and keeps the best across continue-as-new',
    { timeout: 180_000 },
    async () => {
      // base 0.5; margin 0.1: cand-0 at 0.6 ties best+margin (not promoted), cand-1 at 0.65 is promoted, cand-2 at
      // 0.7 must now beat 0.65+0.1 (not promoted), cand-3 at 0.8 does. continueAsNewEvery 2: the run continues as new
      // after iteration 1, so cand-2 and cand-3 are compared against the best carried in the state.
      const s = stubs({ 'smollm2-135m-instruct': 0.5, 'cand-0': 0.6, 'cand-1': 0.65, 'cand-2': 0.7, 'cand-3': 0.8 });
      const config = runConfig('promo-run', { iterations: 4, promoteMargin: 0.1, continueAsNewEvery: 2 });
      const result = (await withStubWorkers(env, s, () =>
        env.env.client.workflow.execute('trainingRun', {
          taskQueue: CPU_QUEUE,
          workflowId: 'promo-run',
          args: [config],
          memo: { [DASHBOARD_MEMO]: 'http://127.0.0.1:8600' },
        }),
      )) as RunStatus;
      // The run that continued as new still has the dashboard memo its current details link from.
      const { memo } = await env.env.client.workflow.getHandle('promo-run').describe();
      assert.deepEqual(memo, { [DASHBOARD_MEMO]: 'http://127.0.0.1:8600' });

      assert.deepEqual(s.calls.promoted, [
        { name: 'cand-1', score: 0.65 },
        { name: 'cand-3', score: 0.8 },
      ]);
      assert.deepEqual(
        result.history.map((h) => [h.evalScore, h.promoted]),
        [
          [0.6, false],
          [0.65, true],
          [0.7, false],
          [0.8, true],
        ],
      );
      assert.equal(result.best?.policy.name, 'cand-3');
      assert.equal(result.best?.score, 0.8);
      assert.equal(result.iteration, 4);
      assert.equal(result.phase, 'done');
      // On-policy: each update starts from the latest policy, promoted or not.
      assert.deepEqual(s.calls.trained, [
        { iteration: 0, from: 'smollm2-135m-instruct' },
        { iteration: 1, from: 'cand-0' },
        { iteration: 2, from: 'cand-1' },
        { iteration: 3, from: 'cand-2' },
      ]);
      const trainPolicies = s.calls.launched.filter((l) => l.mode === 'train').map((l) => [l.iteration, l.policy.name]);
      assert.deepEqual(trainPolicies, [
        [0, 'smollm2-135m-instruct'],
        [1, 'cand-0'],
        [2, 'cand-1'],
        [3, 'cand-2'],
      ]);
      // Held-out evaluations: the base once (not again after continue-as-new), then every candidate.
      const evals = s.calls.launched.filter((l) => l.mode === 'eval').map((l) => l.policy.name);
      assert.deepEqual(evals, ['smollm2-135m-instruct', 'cand-0', 'cand-1', 'cand-2', 'cand-3']);
      const executions = [];
      for await (const w of env.env.client.workflow.list({ query: "WorkflowId = 'promo-run'" }))
        executions.push(w.status.name);
      assert.deepEqual(executions.sort(), ['COMPLETED', 'CONTINUED_AS_NEW']);
    },
  );

  void it(
    'pause holds the run between iterations (the running one finishes) and resume continues it',
    { timeout: 180_000 },
    async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const s = stubs({ 'smollm2-135m-instruct': 0.5, 'cand-0': 0.4, 'cand-1': 0.9 }, { holdTrainRollouts: held });
      const config = runConfig('pause-run', { iterations: 2, promoteMargin: 0 });
      await withStubWorkers(env, s, async () => {
        // Started as `volt train` starts it, with the dashboard's URL.
        const { handle } = await startTrainingRun(env.env.client, config, {
          dashboardUrl: 'http://dash.example:8600/',
        });
        await until(() => s.calls.launched.some((l) => l.mode === 'train' && l.iteration === 0));
        await handle.signal(pauseSignal);
        await until(async () => (await handle.query(statusQuery)).paused);
        release();
        // Iteration 0 completes while paused; iteration 1 does not start.
        await until(async () => (await handle.query(statusQuery)).iteration === 1);
        const paused = await handle.query(statusQuery);
        assert.equal(paused.phase, 'paused');
        assert.equal(paused.history.length, 1);
        // Temporal Web's current details: what the run does, then its dashboard page.
        const details = async () =>
          (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
        await until(async () => (await details()).startsWith('paused'));
        assert.equal(
          await details(),
          'paused before iteration 1\n\n[Volt dashboard: run pause-run](http://dash.example:8600/runs/pause-run)',
        );
        const history = await handle.fetchHistory();
        const children = history.events
          ?.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)
          .map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId);
        assert.deepEqual(children, ['pause-run-eval-base', 'pause-run-iter-0']);
        assert.ok(
          !s.calls.launched.some((l) => l.iteration === 1 && l.mode === 'train'),
          'iteration 1 launched rollouts while paused',
        );

        await handle.signal(resumeSignal);
        const done = (await handle.result()) as RunStatus;
        assert.equal(done.iteration, 2);
        assert.equal(done.paused, false);
        assert.deepEqual(
          done.history.map((h) => h.promoted),
          [false, true],
        );
        assert.deepEqual(s.calls.promoted, [{ name: 'cand-1', score: 0.9 }]);
      });
    },
  );
});

/** Polls a condition (the workflow runs on its own schedule); fails after a minute rather than hanging. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail('condition not reached within 60 s');
}
