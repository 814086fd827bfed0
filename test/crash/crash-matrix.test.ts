import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { parseRunConfig, type RunConfigInput } from '../../src/config/run.js';
import { modelAliasSchema, type ModelAlias } from '../../src/contracts/policy.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { killHard, until } from '../helpers/processes.js';
import { root, startPipelineStack, tinyRunConfig, type PipelineStack } from '../pipeline/harness.js';
import { liveAgents, openStreams, spanStored, trainerProgress, walSpanKeys } from './kill-points.js';
import { assertNothingLost, readLedger, type LedgerReport, type RunPlan } from './ledger.js';

// The crash matrix: one tiny training run per cell (real Temporal, S3, SmolLM2 model server, gateway, workers,
// trainer and agents), one part SIGKILLed mid-work, then the ledger check: nothing lost, nothing duplicated.
// VOLT_CRASH_MATRIX=full runs every cell; the default runs the fast subset (CI).
const FULL = process.env.VOLT_CRASH_MATRIX === 'full';
const AGENT = path.join(root, 'test/crash/agents/recording-agent.mjs');
const CALLS = 2;
const shape = { groupSize: 2, tasksPerIteration: 2, evalTasks: 2, iterations: 1, calls: CALLS };

describe(
  'crash matrix: a part killed mid-work loses and duplicates nothing',
  { timeout: FULL ? 7_200_000 : 3_600_000 },
  () => {
    let stack: PipelineStack;
    let store: ObjectStore;
    const workers: { cpu?: ChildProcess; gpu?: ChildProcess } = {};
    const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-crash-'));

    before(async () => {
      stack = await startPipelineStack({ ownTemporal: {} });
      store = createObjectStore(stack.env);
      await stack.startGateway();
      workers.gpu = await stack.startWorker('gpu');
      workers.cpu = await stack.startWorker('cpu');
    });
    after(async () => {
      await stack?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const restart = async (queue: 'cpu' | 'gpu') => {
      await killHard(workers[queue]!, `${queue} worker`);
      workers[queue] = await stack.startWorker(queue);
    };

    /** Starts the cell's run, lets `kill` strike mid-work, waits for the run and checks the ledger. */
    async function cell(
      name: string,
      kill: (ctx: { runId: string; ledger: () => ReturnType<typeof readLedger> }) => Promise<void>,
      over: { iterations?: number; eval?: RunConfigInput['eval']; trainer?: RunConfigInput['trainer'] } = {},
    ): Promise<{ report: LedgerReport; status: RunStatus; runId: string }> {
      const runId = `crash-${name}`;
      const ledgerFile = path.join(dir, `${runId}.jsonl`);
      const iterations = over.iterations ?? shape.iterations;
      const config = parseRunConfig(
        tinyRunConfig(runId, {
          iterations,
          agent: {
            command: [process.execPath, AGENT, ledgerFile, String(CALLS)],
            envAllowList: ['PATH', 'HOME'],
            timeoutSec: 300,
          },
          // Unsandboxed so the agent can write its ledger outside its workdir; the sandbox is not what is under test.
          rollouts: {
            groupSize: shape.groupSize,
            tasksPerIteration: shape.tasksPerIteration,
            concurrency: 2,
            sandbox: 'none',
          },
          // One sample per optimizer step: the update takes several steps, so a kill can land between two of them.
          trainer: over.trainer ?? { lr: 1e-3, minibatchSize: 1, microBatchSize: 1 },
          eval: over.eval ?? { tasks: shape.evalTasks, everyIterations: 1, promoteMargin: 0 },
          timeouts: { heartbeatSec: 10, rolloutsSec: 900, updateSec: 900 },
        }),
      );
      const { client, close } = await connectClient(stack.env);
      await startTrainingRun(client, config).finally(close);
      await kill({ runId, ledger: () => readLedger(ledgerFile) });
      // A fresh connection: the cell may have restarted the Temporal server under the first one.
      const again = await connectClient(stack.env);
      const status: RunStatus = await again.client.workflow.getHandle(runId).result().finally(again.close);
      const plan: RunPlan = { runId, ...shape, iterations };
      return { report: await assertNothingLost(store, plan, status, readLedger(ledgerFile)), status, runId };
    }

    const rolloutsStarted = async (runId: string, prefix: string, iteration = 0) => {
      for await (const o of store.list(`${keys.iteration(runId, iteration)}rollouts/${prefix}`))
        if (o.key.endsWith('started.json')) return true;
      return false;
    };
    const outcomesStored = async (runId: string, prefix: string, iteration = 0) => {
      let n = 0;
      for await (const o of store.list(`${keys.iteration(runId, iteration)}rollouts/${prefix}`))
        if (o.key.endsWith('/outcome.json')) n++;
      return n;
    };
    const trainRolloutsStarted = (runId: string) => rolloutsStarted(runId, 'g');

    it(
      'cpu worker killed mid-rollouts: cut-off rollouts run again as new attempts',
      { skip: !FULL && 'VOLT_CRASH_MATRIX=full' },
      async () => {
        let cutOff = new Set<string>();
        const { report } = await cell('cpu-worker', async ({ runId, ledger }) => {
          await until(
            'a training agent mid-rollout',
            async () =>
              (await trainRolloutsStarted(runId)) &&
              liveAgents(ledger()).size > 0 &&
              ledger().some((l) => l.event === 'answered'),
            600_000,
            100,
          );
          cutOff = liveAgents(ledger());
          await restart('cpu');
        });
        assert.ok(cutOff.size > 0);
        assert.ok(report.retriedRollouts >= 1, 'an attempt >= 1 exists: the kill cut off a rollout');
      },
    );

    // test/pipeline/durability.test.ts kills the gpu worker mid-update and checks the resume in every `make test`.
    it(
      'gpu worker killed mid-update after a trainer step: the retried update resumes from the saved step',
      { skip: !FULL && 'VOLT_CRASH_MATRIX=full' },
      async () => {
        let landed = false;
        const { status } = await cell('gpu-worker', async ({ runId }) => {
          await until(
            'the trainer to finish a step',
            () => trainerProgress(stack.env.dataDir, runId, 0).stepped,
            900_000,
            100,
          );
          await restart('gpu');
          landed = !trainerProgress(stack.env.dataDir, runId, 0).finished;
        });
        assert.ok(landed, 'the kill landed before the trainer wrote its adapter');
        const metrics = status.history[0]!.trainMetrics!;
        assert.ok(
          metrics.resumed_from_step! >= 1,
          `the retried trainer resumed from a saved step: ${JSON.stringify(metrics)}`,
        );
        assert.ok(metrics.steps! > metrics.resumed_from_step!, 'and ran the steps after it');
      },
    );

    it('gateway killed mid-stream: the WAL replays its spans, the agent retries the broken call, nothing is lost', async () => {
      const broken: string[] = [];
      const pending: string[] = [];
      const { report } = await cell('gateway', async ({ runId, ledger }) => {
        // Right after a call was answered (its span is in the WAL, its upload deferred while calls are in flight) and
        // while another stream is open; again if a kill found no stream or no pending span to break.
        const justAnswered = () => ledger().some((l) => l.event === 'answered' && l.at > Date.now() - 300);
        for (let kills = 0; kills < 3 && (broken.length === 0 || pending.length === 0); kills++) {
          await until(
            'a stream mid-way just after an answer',
            async () => (await trainRolloutsStarted(runId)) && openStreams(ledger()).size > 0 && justAnswered(),
            600_000,
            20,
          );
          const open = openStreams(ledger());
          await stack.kill('gateway');
          for (const key of walSpanKeys(stack.env.dataDir))
            if (key.includes(`/${runId}/`) && !(await spanStored(store, key))) pending.push(key);
          await stack.startGateway();
          await until(
            'the agents to notice',
            () =>
              [...open].every((r) =>
                ledger().some((l) => l.request === r && (l.event === 'broken' || l.event === 'answered')),
              ),
            120_000,
          );
          broken.push(...[...open].filter((r) => ledger().some((l) => l.request === r && l.event === 'broken')));
        }
      });
      assert.ok(broken.length > 0, 'a kill broke a stream mid-way');
      assert.ok(report.brokenThenAnswered >= 1, 'a final attempt retried a broken call and finished');
      assert.ok(pending.length > 0, 'the gateway died holding spans not yet in S3');
      for (const key of pending) assert.ok(await spanStored(store, key), `${key} reached S3 by the WAL replay`);
    });

    it(
      'model server killed mid-rollout (candidate evaluation, then training on the adapter): attempts become infra_failed, are retried once it is back, on the adapter again',
      { skip: !FULL && 'VOLT_CRASH_MATRIX=full' },
      async () => {
        const open: number[] = [];
        const restartModel = async (ledger: () => ReturnType<typeof readLedger>) => {
          open.push(openStreams(ledger()).size);
          await stack.kill('model');
          await sleep(1000);
          await stack.startModel();
        };
        const { report, status } = await cell(
          'model-server',
          async ({ runId, ledger }) => {
            // Iteration 0's candidate evaluation samples from the trained adapter, which a restarted server has lost.
            await until(
              'a candidate evaluation mid-stream',
              async () => (await rolloutsStarted(runId, 'eval-candidate-')) && openStreams(ledger()).size > 0,
              900_000,
              20,
            );
            await restartModel(ledger);
            // Iteration 1 trains on that adapter: its retried training attempts must get it served again (launchRollouts).
            await until(
              'iteration 1 training mid-stream',
              async () => (await rolloutsStarted(runId, 'g', 1)) && openStreams(ledger()).size > 0,
              900_000,
              20,
            );
            await restartModel(ledger);
          },
          { iterations: 2 },
        );
        assert.ok(
          open.every((n) => n > 0),
          `a call was streaming at each kill: ${open.join(', ')}`,
        );
        const [first] = status.history;
        const evalCandidate = report.outcomes.filter(
          (o) => o.rolloutId.startsWith('eval-candidate-') && o.final.ref.iteration === 0,
        );
        const train1 = report.outcomes.filter((o) => o.rolloutId.startsWith('g') && o.final.ref.iteration === 1);
        const infra = (os: typeof report.outcomes) =>
          os.some((o) => o.attempts.some((a) => a.outcome === 'infra_failed'));
        assert.ok(infra(evalCandidate), 'the first kill made a candidate evaluation attempt infra_failed');
        assert.ok(infra(train1), 'the second kill made an iteration-1 training attempt infra_failed');
        for (const o of report.outcomes)
          for (const a of o.attempts)
            assert.ok(
              a.outcome === 'succeeded' || a.outcome === 'infra_failed',
              `${o.rolloutId}/${a.attempt}: ${a.outcome} ${a.detail}`,
            );
        assert.equal(first!.evalError ?? null, null, 'the evaluation counted');
        assert.equal(first!.eval?.scored, shape.evalTasks);
        // Iteration 1 samples from iteration 0's candidate; every final attempt (retried ones too) was served by it.
        assert.equal(train1.length, shape.tasksPerIteration * shape.groupSize);
        for (const [outcomes, adapter] of [
          [evalCandidate, first!.candidate!.name],
          [train1, first!.candidate!.name],
        ] as const) {
          for (const o of outcomes)
            for await (const span of readSpans(store, o.final.ref))
              assert.equal(span.servedBy.model, adapter, `${o.rolloutId}: served by the adapter`);
        }
      },
    );

    it(
      'gpu worker killed inside promoteCheckpoint: the best alias is old or new, never torn; the served adapter matches it after the retry',
      { skip: !FULL && 'VOLT_CRASH_MATRIX=full' },
      async () => {
        const seen: { atKill?: ModelAlias; pending?: { attempt: number } } = {};
        const aliasKey = (runId: string) => keys.modelAlias(runId, 'best');
        const { status, runId } = await cell(
          'promote',
          async ({ runId }) => {
            // Freeze the model server once the candidate's evaluation rollouts are done (what follows needs no model), so the
            // promotion writes the alias and then blocks loading the adapter: the kill lands between the two.
            await until(
              'the candidate evaluation to end its rollouts',
              async () => (await outcomesStored(runId, 'eval-candidate-')) === shape.evalTasks,
              3_600_000,
              50,
            );
            stack.signal('model', 'SIGSTOP');
            try {
              await until(
                'the promotion to write the alias',
                async () => (await store.getJsonOrNull(aliasKey(runId), modelAliasSchema))?.current.iteration === 0,
                300_000,
                50,
              );
              seen.atKill = await store.getJson(aliasKey(runId), modelAliasSchema);
              const { client, close } = await connectClient(stack.env);
              const described = await client.workflow.getHandle(runId).describe().finally(close);
              const a = described.raw.pendingActivities?.find((p) => p.activityType?.name === 'promoteCheckpoint');
              if (a) seen.pending = { attempt: a.attempt ?? 0 };
              await killHard(workers.gpu!, 'gpu worker');
            } finally {
              stack.signal('model', 'SIGCONT');
            }
            workers.gpu = await stack.startWorker('gpu');
            // -1: the candidate is promoted whatever it scores; one optimizer step: what is under test is the promotion.
          },
          {
            eval: { tasks: shape.evalTasks, everyIterations: 1, promoteMargin: -1 },
            trainer: { lr: 1e-3, minibatchSize: 64, microBatchSize: 4 },
          },
        );
        assert.ok(
          seen.pending,
          'promoteCheckpoint was running when the worker died (the alias written, the adapter not yet loaded)',
        );
        assert.equal(seen.pending.attempt, 1);
        const candidate = status.history[0]!.candidate!;
        assert.ok(status.history[0]!.promoted, 'the retried promotion completed');
        assert.equal(status.best?.policy.sha256, candidate.sha256);
        // Never torn: the alias object parses, names the candidate, and the retry found it written and left it as it was.
        const alias = await store.getJson(aliasKey(runId), modelAliasSchema);
        assert.equal(alias.current.policy.sha256, candidate.sha256);
        assert.deepEqual(alias, seen.atKill, 'the retry reused the alias the killed attempt wrote');
        const { client, close } = await connectClient(stack.env);
        const events = (await client.workflow.getHandle(runId).fetchHistory().finally(close)).events ?? [];
        const scheduled = new Set(
          events
            .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'promoteCheckpoint')
            .map((e) => Number(e.eventId)),
        );
        const started = events.filter((e) =>
          scheduled.has(Number(e.activityTaskStartedEventAttributes?.scheduledEventId ?? -1)),
        );
        assert.equal(scheduled.size, 1, 'one promotion');
        assert.ok((started[0]?.activityTaskStartedEventAttributes?.attempt ?? 0) >= 2, 'it completed on a retry');
        // The model server serves `<run>-best` from the candidate's content-addressed adapter dir.
        const models = (await (await fetch(`${stack.modelUrl}/v1/models`)).json()) as {
          data: { id: string; root: string }[];
        };
        const best = models.data.find((m) => m.id === alias.servedAs);
        assert.equal(alias.servedAs, `${runId}-best`);
        assert.equal(
          best?.root,
          path.join(stack.env.dataDir, 'adapters', candidate.sha256!),
          "the served adapter is the alias's checkpoint",
        );
      },
    );

    it(
      'S3 server killed mid-upload: calls go on with spans in the WAL, which reach S3 once it is back',
      { skip: !FULL && 'VOLT_CRASH_MATRIX=full' },
      async () => {
        let during: string[] = [];
        let live = 0;
        const { report } = await cell('s3', async ({ runId, ledger }) => {
          await until(
            'a training agent mid-rollout',
            async () =>
              (await trainRolloutsStarted(runId)) &&
              liveAgents(ledger()).size > 0 &&
              ledger().some((l) => l.event === 'answered'),
            600_000,
            100,
          );
          live = liveAgents(ledger()).size;
          const down = Date.now();
          await stack.kill('s3');
          await sleep(8000);
          const up = Date.now();
          await stack.startS3();
          during = ledger()
            .filter((l) => l.event === 'answered' && l.at > down && l.at < up)
            .map((l) => l.request!);
        });
        assert.ok(live > 0, 'agents were running when S3 died');
        assert.ok(during.length > 0, 'calls were answered while S3 was down');
        const stored = during.filter((r) => report.storedRequests.has(r));
        const attempts = report.outcomes
          .filter((o) => o.attempts.length > 1)
          .map(
            (o) =>
              `${o.rolloutId}: ${o.attempts.map((a) => `${a.outcome}${a.detail ? ` (${a.detail.slice(0, 160)})` : ''}`).join(',')}`,
          );
        console.log(
          `S3 down: ${during.length} calls answered, ${stored.length} of them in final attempts; ${report.storedRequests.size} requests stored; retried: ${attempts.join('; ') || 'none'}`,
        );
        assert.ok(stored.length > 0, 'spans recorded while S3 was down are in S3, in final attempts');
      },
    );

    it(
      'everything at once (every process of the stack and its agents SIGKILLed mid-iteration), then restarted: the run finishes',
      { skip: !FULL && 'VOLT_CRASH_MATRIX=full' },
      async () => {
        let live = 0;
        const { report } = await cell('power-cut', async ({ runId, ledger }) => {
          await until(
            'training agents mid-rollout',
            async () =>
              (await trainRolloutsStarted(runId)) &&
              liveAgents(ledger()).size > 0 &&
              ledger().some((l) => l.event === 'answered'),
            600_000,
            100,
          );
          const agents = liveAgents(ledger());
          live = agents.size;
          const pids = ledger()
            .filter((l) => l.event === 'start' && agents.has(l.token))
            .map((l) => l.pid);
          await Promise.all([
            killHard(workers.cpu!, 'cpu worker'),
            killHard(workers.gpu!, 'gpu worker'),
            stack.kill('gateway'),
            stack.kill('model'),
            stack.kill('s3'),
            stack.kill('temporal'),
            // each agent leads its own process group
            ...pids.map(async (pid) => {
              try {
                process.kill(-pid, 'SIGKILL');
              } catch {
                /* already gone */
              }
            }),
          ]);
          // In `volt up`'s order.
          await stack.startTemporal();
          await stack.startS3();
          await stack.startModel();
          await stack.startGateway();
          workers.gpu = await stack.startWorker('gpu');
          workers.cpu = await stack.startWorker('cpu');
        });
        assert.ok(live > 0, 'agents were running at the power cut');
        assert.ok(report.retriedRollouts >= 1, 'cut-off rollouts ran again as new attempts');
      },
    );

    it(
      'Temporal dev server killed mid-iteration: workers reconnect and the run continues',
      { skip: !FULL && 'VOLT_CRASH_MATRIX=full' },
      async () => {
        let live = 0;
        await cell('temporal', async ({ runId, ledger }) => {
          await until(
            'a training agent mid-rollout',
            async () => (await trainRolloutsStarted(runId)) && liveAgents(ledger()).size > 0,
            600_000,
            100,
          );
          live = liveAgents(ledger()).size;
          await stack.kill('temporal');
          await sleep(1000);
          await stack.startTemporal();
        });
        assert.ok(live > 0, 'agents were running when Temporal died');
      },
    );
  },
);
