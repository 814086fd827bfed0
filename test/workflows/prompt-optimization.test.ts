import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { ProposeOverlaysInput } from '../../src/activities/prompt-proposals.js';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import { parseRunConfig, type RunConfig } from '../../src/config/run.js';
import type { PromptOverlay } from '../../src/contracts/prompt-overlay.js';
import type { ApoStatus } from '../../src/workflows/prompt-optimization-types.js';
import { recordHistories } from '../replay/histories.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import { startWorkflowEnv, withStubWorkers, type CpuStubs } from './workflow-env.js';

type Env = Awaited<ReturnType<typeof startWorkflowEnv>>;

const TRAIN_SET = 'a'.repeat(64);
const EVAL_SET = 'b'.repeat(64);
const TRAIN = Array.from({ length: 10 }, (_, i) => `train-${i}`);
const VALIDATION = ['val-0', 'val-1', 'val-2', 'val-3'];

const config = (runId: string): RunConfig =>
  parseRunConfig({
    runId,
    seed: 11,
    agent: { command: ['agent'] },
    tasks: { trainFile: 'train.jsonl', evalFile: 'eval.jsonl' },
    reward: { kind: 'string_match', source: 'output_file' },
    eval: { tasks: 2 },
    apo: {
      rounds: 2,
      beamWidth: 2,
      branchFactor: 2,
      trainBatchSize: 3,
      validationBatchSize: 2,
      validationTasks: 4,
      promoteMargin: 0.05,
    },
  }) as RunConfig;

/**
 * Scores by rollout label, as the workflow names them: `val-v<n>` (this round's validation batch), `full-v<n>`
 * (the whole validation set), `heldout-v<n>` (tasks.evalFile) and `train`.
 */
function stubs(scores: {
  val: Record<number, number>[];
  full: Record<number, number>;
  heldOut: Record<number, number>;
}) {
  const calls = {
    launched: [] as LaunchRolloutsInput[],
    proposals: [] as ProposeOverlaysInput[],
    promotions: [] as { version: number; score: number; baselineScore: number }[],
  };
  const score = (iteration: number, label: string): number => {
    if (label === 'train') return 0.5;
    const [, kind, version] = /^(val|full|heldout)-v(\d+)$/.exec(label) ?? [];
    const table =
      kind === 'val'
        ? scores.val[iteration - 1]
        : kind === 'full'
          ? scores.full
          : kind === 'heldout'
            ? scores.heldOut
            : undefined;
    const value = table?.[Number(version)];
    // A score the scenario did not plan for means the search went elsewhere: fail the run instead of inventing one.
    if (value === undefined)
      throw ApplicationFailure.create({
        message: `unplanned scoring: round ${iteration} ${label}`,
        nonRetryable: true,
      });
    return value;
  };
  const cpu: CpuStubs = {
    validateRunConfig: async (raw) => {
      const c = parseRunConfig(raw) as RunConfig;
      return { ...c, tasks: { ...c.tasks, trainSet: TRAIN_SET, evalSet: EVAL_SET } };
    },
    splitApoTasks: async () => ({ trainIds: TRAIN, validationIds: VALIDATION }),
    storeSeedOverlay: async () => ({ version: 0, overlay: null }),
    listTaskIds: async ({ limit }) => ['eval-0', 'eval-1', 'eval-2'].slice(0, limit),
    launchRollouts: async (input) => {
      calls.launched.push(input);
      return {
        results: input.tasks.flatMap((t) =>
          t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
        ),
      };
    },
    computeRewards: async (input) => {
      const meanReward = score(input.iteration, input.label);
      return {
        meanReward,
        rewardSum: meanReward * input.results.length,
        scored: input.results.length,
        infraFailed: 0,
        unscored: [],
        rewardsKey: `rewards/${input.iteration}/${input.label}`,
      };
    },
    scoredRollouts: async ({ iteration }) =>
      calls.launched
        .filter((l) => l.iteration === iteration && l.mode === 'train')
        .flatMap((l) =>
          l.tasks.map((t) => ({
            rolloutId: t.rolloutIds[0]!,
            attempt: 0,
            taskId: t.taskId,
            groupId: t.groupId,
            reward: 1,
          })),
        ),
    proposeOverlays: async (input) => {
      calls.proposals.push(input);
      const overlays: PromptOverlay[] = input.versions.map((version, i) => ({
        runId: input.config.runId,
        version,
        mode: 'append',
        template: `hint ${version}`,
        createdAt: '2026-12-01T00:00:00.000Z',
        origin: {
          strategy: 'bootstrap',
          parents: [input.parents[Math.floor(i / input.config.apo!.branchFactor)]!.version],
          round: input.round,
          note: '',
        },
      }));
      return { overlays, skipped: [] };
    },
    promoteBestPrompt: async (input) => {
      calls.promotions.push({ version: input.version, score: input.score, baselineScore: input.baselineScore });
      const promoted = input.score > input.baselineScore + input.config.apo!.promoteMargin;
      return {
        promoted,
        activeVersion: promoted ? input.version : 0,
        activeScore: promoted ? input.score : null,
        reason: promoted ? 'beats v0' : 'within margin',
      };
    },
  };
  return { cpu, calls };
}

void describe('promptOptimization beam search with stub activities (TestWorkflowEnvironment)', () => {
  let env: Env;
  before(async () => (env = await startWorkflowEnv()));
  after(() => env?.env.teardown());

  void it(
    'keeps the best beamWidth per round (ties to the lower version), scores each leader once, promotes the best ever',
    { timeout: 180_000 },
    async () => {
      // Start: beam [0], v0 = 0.3 on the full validation set (the baseline).
      // Round 1: children 1, 2 of v0; validation batch v0 .3, v1 .5, v2 .5 → beam [1, 2] (tie: v1 first); leader v1 full .4.
      // Round 2: children 3, 4 of v1 and 5, 6 of v2; v1 .7, v2 .2, v3 .1, v4 .6, v5 .6, v6 0 → beam [1, 4]
      // (v4 before v5 on the tie); leader v1 again: its full score is reused, not measured twice. Best ever: v1 .4.
      const s = stubs({
        val: [
          { 0: 0.3, 1: 0.5, 2: 0.5 },
          { 1: 0.7, 2: 0.2, 3: 0.1, 4: 0.6, 5: 0.6, 6: 0 },
        ],
        full: { 0: 0.3, 1: 0.4, 2: 0.9 },
        heldOut: { 0: 0.5, 1: 0.55 },
      });
      const status = (await withStubWorkers(env, { cpu: s.cpu }, () =>
        env.env.client.workflow.execute('promptOptimization', {
          taskQueue: CPU_QUEUE,
          workflowId: 'apo-beam',
          args: [config('apo-beam')],
        }),
      )) as ApoStatus;

      assert.deepEqual(
        status.history.map((h) => ({
          parents: h.parents,
          children: h.children,
          beam: h.beam,
          leader: h.leader,
          best: h.best,
        })),
        [
          {
            parents: [0],
            children: [1, 2],
            beam: [1, 2],
            leader: { version: 1, score: 0.4 },
            best: { version: 1, score: 0.4 },
          },
          {
            parents: [1, 2],
            children: [3, 4, 5, 6],
            beam: [1, 4],
            leader: { version: 1, score: 0.4 },
            best: { version: 1, score: 0.4 },
          },
        ],
      );
      assert.deepEqual(
        status.history[1]!.candidates.map((c) => c.version),
        [1, 4, 5, 2, 3, 6],
      );
      assert.equal(status.baselineScore, 0.3);

      const labels = s.calls.launched.map((l) => l.label);
      assert.deepEqual(
        labels.filter((l) => l.startsWith('full-')),
        ['full-v0', 'full-v1'],
        'each version is scored on the full set once',
      );
      assert.deepEqual(
        labels.filter((l) => l.startsWith('heldout-')),
        ['heldout-v0', 'heldout-v1'],
      );

      // Training batches run the agent's sampling on train tasks; validation and full scoring are greedy on the
      // validation tasks, which live in the train file.
      for (const l of s.calls.launched) {
        const overlay = l.tasks[0]!.rolloutIds[0]!.match(/-v(\d+)-t/)?.[1];
        assert.deepEqual(l.promptOverlay ?? null, Number(overlay) > 0 ? { version: Number(overlay) } : null, l.label);
        if (l.label === 'train') {
          assert.equal(l.mode, 'train');
          assert.ok(l.tasks.every((t) => TRAIN.includes(t.taskId)));
          assert.equal(l.taskSet, TRAIN_SET);
          assert.equal(l.sampling, null, "training batches keep the agent's own sampling");
        } else if (l.label.startsWith('heldout-')) {
          assert.equal(l.taskSet, EVAL_SET);
        } else {
          assert.equal(l.mode, 'eval');
          assert.equal(l.taskSet, TRAIN_SET, 'validation tasks come from the pinned train set');
          assert.notEqual(l.sampling, null, 'validation is scored with the evaluation sampling');
          assert.ok(
            l.tasks.every((t) => VALIDATION.includes(t.taskId)),
            l.label,
          );
        }
      }

      // Proposals: parents in beam order, versions allocated parent-major, each rollout tied to the parent it ran.
      assert.deepEqual(
        s.calls.proposals.map((p) => [p.parents.map((x) => x.version), p.versions]),
        [
          [[0], [1, 2]],
          [
            [1, 2],
            [3, 4, 5, 6],
          ],
        ],
      );
      const round2 = s.calls.proposals[1]!;
      assert.deepEqual(
        round2.parents.map((p) => p.overlay?.template ?? null),
        ['hint 1', 'hint 2'],
      );
      for (const r of round2.rollouts)
        assert.equal(r.parentVersion, Number(/^r2-v(\d+)-/.exec(r.ref.rolloutId)![1]), r.ref.rolloutId);
      assert.equal(round2.rollouts.length, 2 * 3);

      assert.deepEqual(s.calls.promotions, [{ version: 1, score: 0.4, baselineScore: 0.3 }]);
      assert.deepEqual(status.promotion, { promoted: true, activeVersion: 1, activeScore: 0.4, reason: 'beats v0' });
      assert.deepEqual(status.heldOut, { before: 0.5, after: 0.55, afterVersion: 1 });
      assert.equal(status.phase, 'done');
      // The replay fixture for promptOptimization (test/replay/): two rounds, beam 2, branch 2, a promotion.
      if (process.env.VOLT_RECORD_HISTORIES === '1')
        assert.equal((await recordHistories(env.env.client, true, ['promptOptimization'])).length, 1);
    },
  );

  void it(
    "keeps the agent's own prompt when nothing beats it by the margin, without scoring it on held-out twice",
    { timeout: 180_000 },
    async () => {
      const s = stubs({
        val: [
          { 0: 0.5, 1: 0.4, 2: 0.3 },
          { 0: 0.4, 1: 0.5, 3: 0, 4: 0, 5: 0, 6: 0 },
        ],
        full: { 0: 0.5, 1: 0.52 },
        heldOut: { 0: 0.5 },
      });
      const status = (await withStubWorkers(env, { cpu: s.cpu }, () =>
        env.env.client.workflow.execute('promptOptimization', {
          taskQueue: CPU_QUEUE,
          workflowId: 'apo-keep',
          args: [config('apo-keep')],
        }),
      )) as ApoStatus;
      // v1 leads round 2 and is the best ever (0.52), but not by more than the 0.05 margin over v0's 0.5.
      assert.deepEqual(
        status.history.map((h) => h.beam),
        [
          [0, 1],
          [1, 0],
        ],
      );
      assert.deepEqual(s.calls.promotions, [{ version: 1, score: 0.52, baselineScore: 0.5 }]);
      assert.equal(status.promotion?.activeVersion, 0);
      assert.deepEqual(status.heldOut, { before: 0.5, after: 0.5, afterVersion: 0 });
      assert.deepEqual(
        s.calls.launched.filter((l) => l.label.startsWith('heldout-')).map((l) => l.label),
        ['heldout-v0'],
      );
    },
  );
});
