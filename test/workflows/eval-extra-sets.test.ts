import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import { parseRunConfig, type RunConfig } from '../../src/config/run.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { recordHistories } from '../replay/histories.js';
import { startWorkflowEnv, withStubWorkers, type CpuStubs, type GpuStubs } from './workflow-env.js';

type Env = Awaited<ReturnType<typeof startWorkflowEnv>>;
const [TRAIN, MAIN, SET_B] = ['a'.repeat(64), 'b'.repeat(64), 'c'.repeat(64)];
const IDS: Record<string, string[]> = {
  [TRAIN]: ['t0', 't1'],
  [MAIN]: ['e0', 'e1', 'e2', 'e3'],
  [SET_B]: ['b0', 'b1', 'b2', 'b3', 'b4'],
};

function runConfig(runId: string, iterations: number): RunConfig {
  return parseRunConfig({
    runId,
    iterations,
    agent: { command: ['agent'] },
    tasks: { trainFile: 'train.jsonl', evalFile: 'eval.jsonl' },
    rollouts: { groupSize: 2, tasksPerIteration: 2 },
    reward: { kind: 'string_match', source: 'output_file' },
    eval: { tasks: 4, everyIterations: 1, extraSets: [{ name: 'b', file: 'eval-b.jsonl', tasks: 5 }] },
  }) as RunConfig;
}

/**
 * Stub activities scoring each (policy, set) from a table: `scoredB` limits how many set-B rollouts get a score (the
 * rest are infra failures), to show an incomplete extra set is reported, not promoted on and not fatal.
 */
function stubs(scores: Record<string, number>, opts: { scoredB?: number } = {}) {
  const calls = { evals: [] as LaunchRolloutsInput[], promoted: [] as string[] };
  const cpu: CpuStubs = {
    // As the real one: the validated config names every set by hash, eval.extraSets included.
    validateRunConfig: async (raw) => {
      const c = parseRunConfig(raw) as RunConfig;
      return {
        ...c,
        tasks: { ...c.tasks, trainSet: TRAIN, evalSet: MAIN },
        eval: { ...c.eval, extraSets: c.eval.extraSets.map((x) => ({ ...x, set: SET_B })) },
      };
    },
    listTaskIds: async ({ taskSet, limit }) => IDS[taskSet!]!.slice(0, limit),
    launchRollouts: async (input) => {
      if (input.mode === 'eval') calls.evals.push(input);
      return {
        results: input.tasks.flatMap((t) =>
          t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
        ),
      };
    },
    computeRewards: async (input) => {
      const n = input.results.length;
      if (input.mode === 'train')
        return {
          meanReward: 0.5,
          rewardSum: n / 2,
          scored: n,
          infraFailed: 0,
          unscored: [],
          rewardsKey: 'rewards/train',
          groups: { total: 2, informative: 2 },
        };
      const launch = calls.evals.at(-1)!;
      const isB = input.taskSet === SET_B;
      const scored = isB && opts.scoredB !== undefined ? opts.scoredB : n;
      const score = scores[`${launch.policy.name}${isB ? '/b' : ''}`] ?? 0;
      const unscored = input.results.slice(scored).map((r) => ({ rolloutId: r.rolloutId, attempt: r.attempt }));
      return {
        meanReward: score,
        rewardSum: score * scored,
        scored,
        infraFailed: n - scored,
        unscored,
        rewardsKey: `eval/${input.iteration}/${input.label}`,
        byKind: { word: { rewardSum: score * scored, scored, tasks: n } },
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
    servePolicy: async () => undefined,
    trainPolicy: async ({ iteration }) => {
      const policy: PolicyRef = {
        name: `cand-${iteration}`,
        checkpointKey: `ckpt/${iteration}`,
        sha256: `sha-${iteration}`,
        iteration,
      };
      return { policy, metrics: { loss: 0.5 } };
    },
    promoteCheckpoint: async ({ policy }) => void calls.promoted.push(policy.name),
  };
  return { cpu, gpu, calls };
}

void describe('eval.extraSets: held-out sets scored beside the main one, never promoted on (stub activities)', () => {
  let env: Env;
  before(async () => (env = await startWorkflowEnv()));
  after(() => env?.env.teardown());

  void it(
    'scores set B at the base and at every evaluation, reports it per set and kind, and promotes on the main set only',
    { timeout: 180_000 },
    async () => {
      // cand-0 is worse on the main set but far better on set B: not promoted. cand-1 beats the base on the main set.
      const s = stubs({
        'smollm2-135m-instruct': 0.5,
        'smollm2-135m-instruct/b': 0.2,
        'cand-0': 0.25,
        'cand-0/b': 0.8,
        'cand-1': 0.75,
        'cand-1/b': 0.4,
      });
      const result = (await withStubWorkers(env, s, () =>
        env.env.client.workflow.execute('trainingRun', {
          taskQueue: CPU_QUEUE,
          workflowId: 'xs-run',
          args: [runConfig('xs-run', 2)],
        }),
      )) as RunStatus;

      assert.deepEqual(
        s.calls.evals.map((l) => [l.label, l.taskSet, l.tasks.length]),
        [
          ['base', MAIN, 4],
          ['base-b', SET_B, 5],
          ['candidate', MAIN, 4],
          ['candidate-b', SET_B, 5],
          ['candidate', MAIN, 4],
          ['candidate-b', SET_B, 5],
        ],
      );
      const rolloutIds = s.calls.evals.flatMap((l) => l.tasks.flatMap((t) => t.rolloutIds));
      assert.ok(rolloutIds.includes('eval-base-b-0') && rolloutIds.includes('eval-candidate-b-4'));
      assert.equal(result.baseEval?.score, 0.5);
      assert.deepEqual(result.baseEval?.extraSets, [
        {
          name: 'b',
          score: 0.2,
          rewardSum: 1,
          scored: 5,
          tasks: 5,
          resultKey: 'eval/0/base-b',
          error: null,
          byKind: { word: { rewardSum: 1, scored: 5, tasks: 5 } },
        },
      ]);
      assert.deepEqual(
        result.history.map((h) => [h.evalScore, h.eval?.extraSets?.[0]?.score, h.promoted]),
        [
          [0.25, 0.8, false],
          [0.75, 0.4, true],
        ],
      );
      assert.deepEqual(s.calls.promoted, ['cand-1']);
      // Replay fixtures (test/replay/): a run whose evaluations score an extra set, and whose run promotes.
      if (process.env.VOLT_RECORD_HISTORIES === '1')
        assert.ok((await recordHistories(env.env.client, true)).length >= 5);
    },
  );

  void it(
    'an extra set with too few scored tasks is reported incomplete; the main evaluation still counts',
    { timeout: 180_000 },
    async () => {
      const s = stubs({ 'smollm2-135m-instruct': 0.5, 'cand-0': 0.75, 'cand-0/b': 0.9 }, { scoredB: 2 });
      const result = (await withStubWorkers(env, s, () =>
        env.env.client.workflow.execute('trainingRun', {
          taskQueue: CPU_QUEUE,
          workflowId: 'xs-incomplete',
          args: [runConfig('xs-incomplete', 1)],
        }),
      )) as RunStatus;
      const b = result.history[0]!.eval?.extraSets?.[0];
      assert.equal(b?.score, null);
      assert.match(b?.error ?? '', /set b is incomplete: 2\/5 tasks scored .*below eval.minScoredFraction 0.95/);
      assert.equal(result.history[0]!.evalScore, 0.75);
      assert.equal(result.history[0]!.promoted, true);
      // Unscored set-B rollouts ran again (eval.retryRounds, default 2) before the set was reported incomplete.
      assert.equal(s.calls.evals.filter((l) => l.label === 'candidate-b').length, 3);
    },
  );
});
