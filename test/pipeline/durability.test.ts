import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { connectClient } from '../../src/client/connect.js';
import { readBatchFile } from '../../src/batches/batch-file.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { TEMPORAL_BIN } from '../../src/stack/temporal.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { trainerProgress } from '../crash/kill-points.js';
import { killHard, until } from '../helpers/processes.js';
import { recordHistories, replayAll } from '../replay/histories.js';
import { root, startPipelineStack, tinyRunConfig, type PipelineStack } from './harness.js';
import type { RolloutOutcomeRecord } from '../../src/contracts/rollout-outcome.js';
import { rolloutOutcomeRecordSchema } from '../../src/contracts/rollout-outcome.js';

const run = promisify(execFile);
const RUN = 'crash-run';
const GROUP = 3;
const TASKS = 2;

async function count(store: ObjectStore, prefix: string, suffix: string): Promise<number> {
  let n = 0;
  for await (const o of store.list(prefix)) if (o.key.endsWith(suffix)) n += 1;
  return n;
}

// Durability is tested by killing things: workers, the gateway and the Temporal server, each with SIGKILL mid-run.
describe('durability of a training run', { timeout: 2_400_000 }, () => {
  let stack: PipelineStack;
  let store: ObjectStore;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-durability-'));
  const temporal = (...args: string[]) =>
    run(TEMPORAL_BIN, [...args, '--address', stack.env.VOLT_TEMPORAL_ADDRESS], { cwd: root });

  before(async () => {
    // A low suggestion threshold makes Temporal suggest continue-as-new after the first iteration.
    stack = await startPipelineStack({
      ownTemporal: { dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 10 } },
    });
    store = createObjectStore(stack.env);
    await stack.startGateway();
  });
  after(async () => stack?.stop());

  it('a malformed config started from the Temporal CLI fails at once, naming the fields', async () => {
    await stack.startWorker('cpu');
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ runId: 'bad-config', rollouts: { groupSize: -1 }, tasks: { trainFile: 'x' } }));
    await temporal(
      'workflow',
      'start',
      '--type',
      'trainingRun',
      '--task-queue',
      'volt-cpu',
      '--workflow-id',
      'bad-config',
      '--input-file',
      bad,
    );
    const { client, close } = await connectClient(stack.env);
    try {
      const err = await client.workflow
        .getHandle('bad-config')
        .result()
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof WorkflowFailedError, String(err));
      const message = String((err.cause?.cause as Error | undefined)?.message ?? err.cause?.message);
      for (const field of ['rollouts.groupSize', 'agent', 'tasks.evalFile', 'reward'])
        assert.match(message, new RegExp(field.replace('.', '\\.')));
    } finally {
      await close();
    }
  });

  it('survives kill -9 of the cpu worker, the gpu worker (mid-update: it resumes from the saved step), the gateway and the Temporal server, losing and duplicating nothing', async () => {
    const config = tinyRunConfig(RUN, {
      iterations: 2,
      agent: {
        command: [process.execPath, path.join(root, 'test/pipeline/agents/one-call.mjs')],
        envAllowList: ['PATH', 'HOME'],
        timeoutSec: 120,
      },
      // A per-token penalty gives every group reward variance, so both iterations train.
      rollouts: { groupSize: GROUP, tasksPerIteration: TASKS, concurrency: 2 },
      // One sample per optimizer step, so the gpu worker's kill can land between two steps.
      trainer: { lr: 1e-3, minibatchSize: 1, microBatchSize: 1 },
      eval: { tasks: 2, everyIterations: 2, promoteMargin: 0 },
      continueAsNewEvery: 1000,
      timeouts: { heartbeatSec: 15, rolloutsSec: 900, updateSec: 900 },
    });
    const file = path.join(dir, 'run.json');
    writeFileSync(file, JSON.stringify(config));
    let gpu = await stack.startWorker('gpu');
    let cpu = await stack.startWorker('cpu');
    await temporal(
      'workflow',
      'start',
      '--type',
      'trainingRun',
      '--task-queue',
      'volt-cpu',
      '--workflow-id',
      RUN,
      '--input-file',
      file,
    );

    const it0 = keys.iteration(RUN, 0);
    await until(
      'a first training rollout of iteration 0',
      async () => (await count(store, `${it0}rollouts/g`, 'outcome.json')) >= 1,
    );
    await killHard(cpu, 'cpu worker');
    cpu = await stack.startWorker('cpu');

    // An iteration whose groups all scored alike has nothing to train on, so wait for whichever update comes first;
    // the kill lands once its trainer saved a step and before it wrote its adapter, so the retried update resumes.
    await until(
      'a trainer step',
      async () => [0, 1].some((i) => trainerProgress(stack.env.dataDir, RUN, i).stepped),
      600_000,
      100,
    );
    const killedUpdate = [0, 1].find((i) => trainerProgress(stack.env.dataDir, RUN, i).stepped)!;
    await killHard(gpu, 'gpu worker');
    const landedMidUpdate = !trainerProgress(stack.env.dataDir, RUN, killedUpdate).finished;
    gpu = await stack.startWorker('gpu');

    const it1 = keys.iteration(RUN, 1);
    await until('rollouts of iteration 1', async () => (await count(store, `${it1}rollouts/`, 'started.json')) >= 1);
    // The gateway dies between calls of running agents (their SDK retries), and Temporal dies under the run.
    await stack.kill('gateway');
    await stack.startGateway();
    await stack.kill('temporal');
    await sleep(1000);
    await stack.startTemporal();

    const { client, close } = await connectClient(stack.env);
    try {
      const status: RunStatus = await client.workflow.getHandle(RUN).result();
      assert.equal(status.history.length, 2);
      assert.ok(
        status.history.some((h) => h.candidate !== null),
        'at least one iteration trained',
      );
      // The gpu worker's kill landed mid-update, and the retried update resumed from the trainer's saved step.
      assert.ok(landedMidUpdate, `the kill landed before iteration ${killedUpdate}'s trainer wrote its adapter`);
      const metrics = status.history[killedUpdate]!.trainMetrics!;
      assert.ok(metrics.resumed_from_step! >= 1, `resumed from a saved step: ${JSON.stringify(metrics)}`);
      assert.ok(metrics.steps! > metrics.resumed_from_step!, 'and ran the steps after it');
      for (const iteration of [0, 1]) {
        const prefix = keys.iteration(RUN, iteration);
        // Every planned rollout has exactly one outcome, and nothing else ran under this iteration.
        const outcomes: RolloutOutcomeRecord[] = [];
        for await (const o of store.list(`${prefix}rollouts/`))
          if (o.key.endsWith('/outcome.json')) outcomes.push(await store.getJson(o.key, rolloutOutcomeRecordSchema));
        const train = outcomes.filter((o) => o.rolloutId.startsWith('g'));
        assert.equal(train.length, GROUP * TASKS, `iteration ${iteration} rollouts`);
        assert.equal(new Set(train.map((o) => o.rolloutId)).size, train.length);
        assert.ok(train.every((o) => o.final.outcome !== 'infra_failed'));
        // No sample is duplicated, and every sample comes from the final attempt of its rollout.
        if (status.history[iteration]!.samples > 0) {
          const samples = readBatchFile(await store.getBytes(keys.batch(RUN, iteration)));
          assert.equal(new Set(samples.map((s) => s.sample_id)).size, samples.length);
          const spanIds = samples.flatMap((s) => s.span_ids);
          assert.equal(new Set(spanIds).size, spanIds.length, 'no span is in two samples');
          const finalAttempt = new Map(train.map((o) => [o.rolloutId, o.final.ref.attempt]));
          for (const s of samples) assert.equal(s.attempt, finalAttempt.get(s.rollout_id));
        }
      }
      // The low threshold made the run continue-as-new at least once.
      let executions = 0;
      for await (const w of client.workflow.list({ query: `WorkflowId = '${RUN}'` }))
        executions += w.status.name === 'CONTINUED_AS_NEW' || w.status.name === 'COMPLETED' ? 1 : 0;
      assert.ok(executions >= 2, `executions of ${RUN}: ${executions}`);

      // Histories of this run replay on the current workflow code.
      const histories = await recordHistories(client, process.env.VOLT_RECORD_HISTORIES === '1');
      assert.ok(histories.length >= 4);
      await replayAll(histories);
    } finally {
      await close();
    }
  });

  it('a schedule created by the CLI triggers and starts a run', async () => {
    const file = path.join(dir, 'run.json');
    const volt = (...args: string[]) =>
      run(process.execPath, [path.join(root, 'bin/volt.mjs'), ...args], {
        cwd: root,
        env: { ...process.env, ...stack.vars },
      });
    await volt('schedule', 'create', '--id', 'nightly-test', '--cron', '0 3 * * *', '--config', file);
    await volt('schedule', 'trigger', '--id', 'nightly-test');
    const { client, close } = await connectClient(stack.env);
    try {
      let started: string | null = null;
      await until(
        'the scheduled run',
        async () => {
          for await (const w of client.workflow.list({
            query: `WorkflowType = 'trainingRun' AND WorkflowId STARTS_WITH 'nightly-test-'`,
          }))
            started = w.workflowId;
          return started !== null;
        },
        60_000,
      );
      await client.workflow.getHandle(started!).terminate('test done');
    } finally {
      await close();
      await volt('schedule', 'delete', '--id', 'nightly-test');
    }
  });
});
