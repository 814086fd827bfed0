import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { rewardsFileSchema } from '../../src/contracts/rewards.js';
import { rolloutOutcomeRecordSchema } from '../../src/contracts/rollout-outcome.js';
import { connectClient } from '../../src/client/connect.js';
import { loadEnv } from '../../src/config/env.js';
import { parseRunConfig, type RunConfigInput } from '../../src/config/run.js';
import { FailureType } from '../../src/contracts/failures.js';
import { freePort } from '../../src/stack/ports.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { createWorkers } from '../../src/workers/workers.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import type { EvalResult } from '../../src/workflows/types.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { root } from './harness.js';

// Real Temporal, S3, gateway process, worker and agent processes. Infra failures are real too: a task's setup command
// fails (the runner reports infra_failed) the first N times, counted in a file outside the rollout's workdir.
describe(
  'evaluation: unscored rollouts are retried, and too few scored tasks fail the evaluation',
  { timeout: 600_000 },
  () => {
    let services: TestServices;
    let gateway: ChildProcess;
    let store: ObjectStore;
    let workers: Awaited<ReturnType<typeof createWorkers>>;
    let running: Promise<void>;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-eval-fraction-'));
    const agent = path.join(dir, 'agent.mjs');
    // The agent answers what the task tells it to, so the expected score is known: t0, t1, t3 right, t2 wrong.
    writeFileSync(
      agent,
      "import { writeFileSync } from 'node:fs';\nconst t = JSON.parse(process.env.VOLT_TASK);\nwriteFileSync(process.env.VOLT_OUTPUT_FILE, String(t.input.say));\n",
    );
    const failFirst = (name: string, times: number) => [
      'sh',
      '-c',
      `f=${dir}/${name}.count; n=$(cat $f 2>/dev/null || echo 0); echo $((n+1)) > $f; [ "$n" -ge ${times} ]`,
    ];
    const taskFile = (name: string, setupFor: Record<string, string[]>) => {
      const file = path.join(dir, `${name}.jsonl`);
      const lines = ['t0', 't1', 't2', 't3'].map((id) =>
        JSON.stringify({
          id,
          input: { say: id === 't2' ? 0 : 1 },
          reference: { answer: 1 },
          ...(setupFor[id] && { setup: { command: setupFor[id] } }),
        }),
      );
      writeFileSync(file, `${lines.join('\n')}\n`);
      return file;
    };
    const config = (runId: string, evalFile: string, evalOverrides: Record<string, number> = {}) =>
      parseRunConfig({
        runId,
        agent: { command: [process.execPath, agent], envAllowList: ['PATH'], timeoutSec: 60 },
        tasks: { trainFile: evalFile, evalFile },
        // The agent script and the setup counters live in this test's temp dir, which a sandboxed agent cannot see.
        rollouts: { maxAttempts: 3, concurrency: 4, sandbox: 'none' },
        reward: { kind: 'numeric_match', source: 'output_file' },
        eval: { tasks: 4, ...evalOverrides },
        timeouts: { heartbeatSec: 30, rolloutsSec: 300, updateSec: 300 },
      } as RunConfigInput);
    const evaluate = async (runId: string, evalFile: string, evalOverrides?: Record<string, number>) => {
      const { client, close } = await connectClient(env());
      try {
        const policy = { name: 'smollm2-135m-instruct', checkpointKey: null, sha256: null, iteration: null };
        const handle = await client.workflow.start('evaluation', {
          taskQueue: CPU_QUEUE,
          workflowId: `${runId}-eval`,
          args: [{ config: config(runId, evalFile, evalOverrides), iteration: 0, label: 'base', policy }],
        });
        return await handle.result().then(
          (r) => r as EvalResult,
          (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
        );
      } finally {
        await close();
      }
    };
    let vars: Record<string, string>;
    const env = () => loadEnv(vars, root);

    before(async () => {
      services = await startTestServices({ temporal: true, s3: true });
      const port = await freePort('127.0.0.1');
      // The agents here never call the model, so the model server address may point nowhere.
      vars = {
        ...services.env,
        VOLT_GATEWAY_URL: `http://127.0.0.1:${port}`,
        VOLT_GATEWAY_ADMIN_KEY: 'eval-test-admin-key',
        VOLT_MODEL_SERVER_URL: 'http://127.0.0.1:9',
      };
      gateway = spawn(process.execPath, [path.join(root, 'bin/volt.mjs'), 'gateway'], {
        cwd: root,
        env: { ...process.env, ...vars },
        stdio: 'ignore',
      });
      for (
        let i = 0;
        !(await fetch(`${vars.VOLT_GATEWAY_URL}/healthz`).then(
          (r) => r.ok,
          () => false,
        ));
        i++
      ) {
        if (i > 300) throw new Error('gateway did not start');
        await sleep(100);
      }
      store = createObjectStore(env());
      Runtime.install({ logger: new DefaultLogger('ERROR') });
      workers = await createWorkers(env(), ['cpu', 'gpu']);
      running = workers.run();
    });
    after(async () => {
      workers?.shutdown();
      await running;
      gateway?.kill('SIGKILL');
      await services?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a rollout that infra-failed every attempt of its first round is retried as a new attempt and scored', async () => {
      // t3's setup fails 3 times: all 3 attempts of the first launch are infra_failed; the retry round's attempt 3 works.
      const result = await evaluate('eval-retry', taskFile('retry', { t3: failFirst('retry-t3', 3) }));
      assert.ok(!(result instanceof Error), String(result));
      assert.equal(result.tasks, 4);
      assert.equal(result.scored, 4, 'every task was scored');
      assert.equal(result.rewardSum, 3);
      assert.equal(result.score, 0.75);
      const record = await store.getJson(
        keys.rolloutOutcome('eval-retry', 0, 'eval-base-3'),
        rolloutOutcomeRecordSchema,
      );
      assert.equal(record.final.ref.attempt, 3);
      assert.deepEqual(
        record.attempts.map((a) => [a.attempt, a.outcome]),
        [
          [0, 'infra_failed'],
          [1, 'infra_failed'],
          [2, 'infra_failed'],
          [3, 'succeeded'],
        ],
      );
      const file = await store.getJson(result.resultKey, rewardsFileSchema);
      assert.deepEqual(
        file.rollouts.map((r) => [r.rolloutId, r.attempt, r.reward]),
        [
          ['eval-base-0', 0, 1],
          ['eval-base-1', 0, 1],
          ['eval-base-2', 0, 0],
          ['eval-base-3', 3, 1],
        ],
      );
    });

    it('fails with VoltEvaluationIncomplete when fewer than eval.minScoredFraction of the tasks could be scored', async () => {
      const result = await evaluate(
        'eval-incomplete',
        taskFile('incomplete', { t1: failFirst('incomplete-t1', 1000) }),
      );
      assert.ok(
        result instanceof WorkflowFailedError,
        `expected the evaluation to fail, got ${JSON.stringify(result)}`,
      );
      const cause = result.cause;
      assert.ok(cause instanceof ApplicationFailure, String(cause));
      assert.equal(cause.type, FailureType.EvaluationIncomplete);
      assert.equal(cause.nonRetryable, true);
      assert.match(cause.message, /3\/4 tasks scored/);
      // Three rounds (the first and two retry rounds) of three attempts each: every one a new attempt.
      const record = await store.getJson(
        keys.rolloutOutcome('eval-incomplete', 0, 'eval-base-1'),
        rolloutOutcomeRecordSchema,
      );
      assert.deepEqual(
        record.attempts.map((a) => a.attempt),
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
      );
    });

    it('counts an evaluation whose scored fraction reaches the configured minimum', async () => {
      const result = await evaluate('eval-lenient', taskFile('lenient', { t1: failFirst('lenient-t1', 1000) }), {
        minScoredFraction: 0.75,
        retryRounds: 0,
      });
      assert.ok(!(result instanceof Error), String(result));
      assert.deepEqual([result.scored, result.tasks, result.rewardSum, result.infraFailed], [3, 4, 2, 1]);
      assert.equal(result.score, 2 / 3);
    });
  },
);
