/**
 * Orchestration overhead of one training iteration: 64 rollouts of a trivial real agent (one 2-token model call and
 * a self-reported random reward) and the smallest real LoRA update, on real Temporal, S3, gateway, model server.
 *   node --import tsx bench/orchestration.ts [--rollouts 64] [--concurrency 8]
 * Prints the iteration's wall time split into agent time (first agent start → last agent end), trainer process
 * time, and the rest (orchestration: Temporal, activities, S3, gateway registration/close, rewards, batch), plus
 * the iteration's activity count and history size. Goal: overhead ≤ 5 s per iteration.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectClient } from '../src/client/connect.js';
import { startTrainingRun } from '../src/client/runs.js';
import { parseRunConfig } from '../src/config/run.js';
import { keys } from '../src/storage/keys.js';
import { createObjectStore } from '../src/storage/object-store.js';
import type { RunStatus } from '../src/workflows/types.js';
import { root, startPipelineStack, tinyRunConfig } from '../test/pipeline/harness.js';
import { rolloutOutcomeRecordSchema, rolloutStartedSchema } from '../src/contracts/rollout-outcome.js';

const { values } = parseArgs({
  options: { rollouts: { type: 'string', default: '64' }, concurrency: { type: 'string', default: '8' } },
});
const rollouts = Number(values.rollouts);
const groupSize = 4;

const stack = await startPipelineStack();
try {
  await stack.startGateway();
  await stack.startWorker('all');
  const config = parseRunConfig(
    tinyRunConfig('bench-orchestration', {
      agent: {
        command: [process.execPath, path.join(root, 'bench/agents/trivial.mjs')],
        envAllowList: ['PATH', 'HOME'],
        timeoutSec: 120,
      },
      rollouts: {
        groupSize,
        tasksPerIteration: Math.ceil(rollouts / groupSize),
        concurrency: Number(values.concurrency),
      },
      reward: { kind: 'agent_emitted', aggregate: 'last' },
      trainer: { lr: 1e-4, minibatchSize: 64, microBatchSize: 16 },
      eval: { everyIterations: 0, tasks: 1, promoteMargin: 0 },
    }),
  );
  const { client, close } = await connectClient(stack.env);
  try {
    const { handle } = await startTrainingRun(client, config);
    const result: RunStatus = await handle.result();
    const iterationId = `${config.runId}-iter-0`;
    const it = await client.workflow.getHandle(iterationId).describe();
    const history = await client.workflow.getHandle(iterationId).fetchHistory();
    const events = history.events ?? [];
    const wall = (it.closeTime!.getTime() - it.startTime.getTime()) / 1000;
    const activities = events.filter((e) => e.activityTaskScheduledEventAttributes).length;
    const historyBytes = JSON.stringify(history).length;

    const store = createObjectStore(stack.env);
    let first = Infinity;
    let last = 0;
    for await (const o of store.list(keys.iteration(config.runId, 0) + 'rollouts/')) {
      if (!o.key.endsWith('/outcome.json')) continue;
      const rec = await store.getJson(o.key, rolloutOutcomeRecordSchema);
      const started = await store.getJson(keys.rolloutStarted(rec.final.ref), rolloutStartedSchema);
      const t0 = Date.parse(started.startedAt);
      first = Math.min(first, t0);
      last = Math.max(last, t0 + rec.final.durationMs);
    }
    const agents = (last - first) / 1000;
    const trainer = result.history[0]?.trainMetrics?.trainer_seconds ?? 0;
    const overhead = wall - agents - trainer;
    console.log(
      `iteration with ${rollouts} rollouts (concurrency ${values.concurrency}), ${result.history[0]?.samples ?? 0} samples`,
    );
    console.log(`  wall             ${wall.toFixed(2)} s`);
    console.log(`  agents makespan  ${agents.toFixed(2)} s   (${((agents / wall) * 100).toFixed(1)} %)`);
    console.log(`  trainer process  ${trainer.toFixed(2)} s   (${((trainer / wall) * 100).toFixed(1)} %)`);
    console.log(
      `  orchestration    ${overhead.toFixed(2)} s   (${((overhead / wall) * 100).toFixed(1)} %)   goal <= 5 s`,
    );
    console.log(
      `  activities ${activities}, history events ${events.length}, history ${(historyBytes / 1024).toFixed(1)} KiB`,
    );
  } finally {
    await close();
  }
} finally {
  await stack.stop();
}
