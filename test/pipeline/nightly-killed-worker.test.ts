import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { deployAliasSchema, lineageSchema } from '../../src/contracts/lineage.js';
import { keys } from '../../src/storage/keys.js';
import { runIdFromWorkflowId } from '../../src/workflows/run-id.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { killHard, until } from '../helpers/processes.js';
import { root, tinyRunConfig } from './harness.js';
import { startNightlyStack, trainingOutcomes, watchAlias, type NightlyStack } from './nightly-stack.js';

const LINEAGE = 'calc-killed';
const ALIAS = 'calc-killed-prod';
const PREFIX = 'task-sources/calc-killed/';
const trainLines = readFileSync(path.join(root, 'examples/calculator/tasks/train.jsonl'), 'utf8').trim().split('\n');

// A night of a lineage on a real Temporal Schedule, S3, model server, trainer and agent processes, whose only worker
// is SIGKILLed mid-rollouts and restarted; the alias is polled (record and model server) from start to end.
describe('a killed worker during a scheduled night', { timeout: 3_000_000 }, () => {
  let n: NightlyStack;
  let watcher: ReturnType<typeof watchAlias>;
  before(async () => {
    n = await startNightlyStack(LINEAGE, PREFIX);
    watcher = watchAlias(n.store, n.stack.modelUrl, ALIAS);
  });
  after(async () => {
    await watcher?.stop();
    await n?.close();
  });

  it('the night resumes on the restarted worker and finishes; the alias never points at an unpromoted checkpoint', async () => {
    const config = tinyRunConfig('unused', {
      deploy: { alias: ALIAS },
      tasks: { trainPrefix: PREFIX, replayShare: 0, evalFile: path.join(root, 'examples/calculator/tasks/eval.jsonl') },
      // The widest non-inferiority margin, so the night nearly always promotes and the watcher sees the alias move after
      // the kill (the per-token penalty keeps rewards apart within a group, so there is a batch to train on).
      eval: { tasks: 2, everyIterations: 1, promoteMargin: -1 },
    });
    const configFile = path.join(n.dir, 'run.json');
    writeFileSync(configFile, JSON.stringify(config));
    const created = await n.cli([
      'schedule',
      'create',
      '--lineage',
      LINEAGE,
      '--cron',
      '0 2 29 2 *',
      '--config',
      configFile,
    ]);
    assert.equal(created.code, 0, created.stderr);
    await n.addTasks('night-0', trainLines.slice(0, 2));
    await n.trigger();
    const workflowId = await n.nightStarted(0);
    const runId = runIdFromWorkflowId(workflowId);
    const planned = config.rollouts!.groupSize! * config.rollouts!.tasksPerIteration!;

    await until(
      'a first training rollout of the night',
      async () => (await trainingOutcomes(n.store, runId)).length >= 1,
      1_800_000,
      250,
    );
    await killHard(n.worker, 'worker');
    const doneAtKill = (await trainingOutcomes(n.store, runId)).length;
    assert.ok(
      doneAtKill < planned && !(await n.store.stat(keys.rewards(runId, 0))),
      `the kill landed mid-rollouts (${doneAtKill}/${planned} done)`,
    );
    console.log(`worker killed with ${doneAtKill}/${planned} training rollouts of ${runId} done`);
    await n.stack.startWorker('all', 600_000);

    const status = (await n.client.workflow.getHandle(workflowId).result()) as RunStatus;
    assert.equal(
      (await n.actions()).recentActions.length,
      1,
      'the killed night resumed: the schedule started no other run',
    );
    assert.equal(status.history.length, 1);
    const finals = await trainingOutcomes(n.store, runId);
    assert.equal(finals.length, planned, 'every planned rollout has one outcome');
    assert.equal(new Set(finals.map((o) => o.rolloutId)).size, planned);
    assert.ok(
      finals.every((o) => o.final.outcome !== 'infra_failed'),
      'no rollout of the night ended as an infra failure',
    );

    const h = status.history[0]!;
    const lineage = await n.store.getJson(keys.lineage(LINEAGE), lineageSchema);
    assert.equal(lineage.runs.length, 1);
    assert.equal(lineage.runs[0]!.outcome, h.promoted ? 'promoted' : 'kept');
    const alias = await n.store.getJson(keys.deployAlias(ALIAS), deployAliasSchema);
    const promoted = h.promoted ? [h.candidate!.sha256!] : [];
    assert.deepEqual(
      alias.current ? [alias.current.policy.sha256] : [],
      promoted,
      'the alias is the promoted candidate, or still only claimed',
    );
    assert.equal(lineage.current?.policy.sha256 ?? null, promoted[0] ?? null);

    // Polled throughout, the kill included: the record and the model server only ever had promoted checkpoints under the alias.
    await watcher.stop();
    const { seen } = watcher;
    console.log(
      `alias watcher: ${seen.polls} polls; record saw ${seen.record.size}, server served ${seen.served.size} checkpoint(s); promoted: ${h.promoted}`,
    );
    assert.ok(seen.polls > 10);
    // A promoted night: the alias moved from its claim to exactly the candidate (record and server), and to nothing else.
    assert.deepEqual([...seen.record], promoted, 'the alias record held the promoted candidate and nothing else');
    assert.deepEqual(
      [...seen.served],
      promoted,
      'the model server served the promoted candidate under the alias and nothing else',
    );
    for (const sha of [...seen.record, ...seen.served])
      assert.ok(promoted.includes(sha), `the alias pointed at ${sha}, which was never promoted`);
  });
});
