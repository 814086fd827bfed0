/**
 * Solve rate of the coding example (the base model's, or a trained adapter's with `--adapter`): the real pipeline pieces (gateway, sandboxed LocalRunner, launchRollouts,
 * computeRewards with examples/coding/run.json's reward) on held-out tasks against Volt's model server (SmolLM2-135M
 * on CPU), greedy like an evaluation. Prints per-task results, the solve rate, the timeouts (the agent's, or its SDK's:
 * `--timeout-sec` is also the agent's AGENT_REQUEST_TIMEOUT) apart, and the guard flags seen.
 *
 *   node --import tsx scripts/measure-coding.ts [-n 24] [--concurrency 2] [--temperature 0] [--timeout-sec 240]
 *     [--tasks examples/coding/tasks/eval.jsonl] [--transcripts] [--adapter DIR]
 *   --transcripts: each rollout's steps, from its stderr; --adapter: a trained LoRA adapter's directory (a run's
 *   `.volt/adapters/<sha256>`, its checkpoint's sha256 in `volt run-status`), served by the model server and sampled
 *   instead of the base model.
 *
 * It borrows the test helpers that start a private S3 server, model server and gateway on free loopback ports.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { ActivityDeps } from '../src/activities/deps.js';
import { createRewardActivities } from '../src/activities/rewards.js';
import { createRolloutActivities } from '../src/activities/rollouts.js';
import { parseRunConfig } from '../src/config/run.js';
import { rewardsFileSchema } from '../src/contracts/rewards.js';
import { parseTaskLines } from '../src/contracts/task.js';
import { LocalRunner } from '../src/rollouts/local-runner.js';
import { objectStoreLogSink } from '../src/rollouts/log-sink.js';
import { createObjectStore } from '../src/storage/object-store.js';
import { keys } from '../src/storage/keys.js';
import { PinnedTaskSets } from '../src/tasks/pinned-task-sets.js';
import { startGateway } from '../test/gateway/harness.js';
import { MODEL_ADMIN_KEY, SERVED_MODEL, startModelServer } from '../test/gateway/model-server.js';
import { createModelServerClient } from '../src/serving/model-server-client.js';
import { startTestServices } from '../test/helpers/services.js';

const { values } = parseArgs({
  options: {
    n: { type: 'string', short: 'n', default: '24' },
    concurrency: { type: 'string', default: '2' },
    temperature: { type: 'string', default: '0' },
    'timeout-sec': { type: 'string', default: '240' },
    tasks: { type: 'string', default: 'examples/coding/tasks/eval.jsonl' },
    transcripts: { type: 'boolean', default: false },
    adapter: { type: 'string' },
  },
});
const env = () => new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });

const started = Date.now();
const [services, model] = await Promise.all([startTestServices({ s3: true }), startModelServer()]);
const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-measure-coding-'));
// Interrupted, it still stops the servers it started (they would keep a CPU busy otherwise).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void Promise.all([model.stop(), services.stop()]).finally(() => process.exit(130)));
}
try {
  const store = createObjectStore({ ...services.s3, bucket: 'volt-measure-coding' });
  await store.ensureBucket();
  const gateway = await startGateway(store, dir, model.url);
  const base = JSON.parse(readFileSync('examples/coding/run.json', 'utf8')) as Record<string, unknown>;
  const config = parseRunConfig({
    ...base,
    runId: 'measure-coding',
    agent: {
      ...(base.agent as { env?: object }),
      timeoutSec: Number(values['timeout-sec']),
      // The SDK's own per-request timeout (120 s) would cut calls that an overloaded model server answers late.
      env: { ...(base.agent as { env?: object }).env, AGENT_REQUEST_TIMEOUT: values['timeout-sec'] },
    },
    rollouts: { ...(base.rollouts as object), concurrency: Number(values.concurrency) },
  });
  const deps = {
    store,
    gateway: gateway.admin,
    taskSets: new PinnedTaskSets(store, process.cwd()),
    python: path.resolve('.venv/bin/python'),
    env: {},
    runner: new LocalRunner({
      root: path.join(dir, 'rollouts'),
      logs: objectStoreLogSink(store),
      hide: [dir],
      concurrency: Number(values.concurrency),
    }),
  } as unknown as ActivityDeps;
  const tasks = parseTaskLines(readFileSync(values.tasks, 'utf8'), values.tasks).slice(0, Number(values.n));
  const { sha256: taskSet } = await (deps.taskSets as PinnedTaskSets).pinFile(values.tasks);
  let policyName = SERVED_MODEL;
  if (values.adapter) {
    policyName = 'measured-adapter';
    await createModelServerClient({ url: model.url, adminKey: MODEL_ADMIN_KEY }).loadAdapter(
      policyName,
      path.resolve(values.adapter),
    );
  }
  const policy = { name: policyName, checkpointKey: null, sha256: null, iteration: null };
  const input = {
    config,
    iteration: 0,
    mode: 'eval' as const,
    label: 'base',
    policy,
    taskSet,
    sampling: { temperature: Number(values.temperature) },
    tasks: tasks.map((t, i) => ({ taskId: t.id, groupId: `g${i}`, rolloutIds: [`r${i}`] })),
  };
  const launch = createRolloutActivities(deps).launchRollouts;
  const launched: Awaited<ReturnType<typeof launch>> = await env().run(launch, input);
  const compute = createRewardActivities(deps).computeRewards;
  const scored: Awaited<ReturnType<typeof compute>> = await env().run(compute, {
    config,
    iteration: 0,
    mode: 'eval' as const,
    label: 'base',
    taskSet,
    results: launched.results,
  });
  const file = await store.getJson(scored.rewardsKey, rewardsFileSchema);
  const flags = new Map<string, number>();
  let solved = 0;
  let timeouts = 0;
  for (const r of file.rollouts) {
    if (r.parts.hidden_tests === 1) solved += 1;
    for (const f of r.flags)
      flags.set(f.split(':').slice(0, 2).join(':'), (flags.get(f.split(':').slice(0, 2).join(':')) ?? 0) + 1);
    // A timeout (the agent's, or the SDK's on a slow model server) says nothing about the model: counted apart.
    const stderr = (
      await store.getBytes(
        keys.rolloutLog({ runId: config.runId, iteration: 0, rolloutId: r.rolloutId, attempt: r.attempt }, 'stderr'),
      )
    ).toString('utf8');
    const timedOut = r.outcome === 'timed_out' || /APITimeoutError|Request timed out/.test(stderr);
    if (timedOut) timeouts += 1;
    console.log(
      `${r.taskId}\t${r.outcome}${timedOut ? ' (timeout)' : ''}\thidden_tests=${r.parts.hidden_tests ?? 'n/a'}\treward=${r.reward}\t${r.flags.join(' ')}`,
    );
    if (values.transcripts)
      for (const line of stderr.split('\n').filter((l) => l.startsWith('[step')))
        console.log(`  ${line.slice(0, 240)}`);
  }
  console.log(
    `solved ${solved}/${file.rollouts.length} (${((100 * solved) / file.rollouts.length).toFixed(1)} %), scored ${file.scored}, ` +
      `infra failed ${file.infraFailed}, timeouts ${timeouts}, ${values.adapter ? `adapter ${values.adapter}` : 'base model'}, temperature ${values.temperature}, ${((Date.now() - started) / 1000).toFixed(0)} s, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  console.log(`flags: ${JSON.stringify(Object.fromEntries(flags))}`);
  const kindOf = new Map(tasks.map((t) => [t.id, t.kind ?? 'none']));
  const byKind = new Map<string, { solved: number; of: number }>();
  for (const r of file.rollouts) {
    const k = byKind.get(kindOf.get(r.taskId) ?? 'none') ?? { solved: 0, of: 0 };
    byKind.set(kindOf.get(r.taskId) ?? 'none', {
      solved: k.solved + (r.parts.hidden_tests === 1 ? 1 : 0),
      of: k.of + 1,
    });
  }
  console.log(`by kind: ${[...byKind].map(([k, v]) => `${k} ${v.solved}/${v.of}`).join(', ')}`);
  await (deps.runner as LocalRunner).close();
  await gateway.close();
} finally {
  await Promise.all([model.stop(), services.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
