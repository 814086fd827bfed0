import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLineageActivities } from '../../src/activities/lineage.js';
import { parseRunConfig } from '../../src/config/run.js';
import { lineageSchema } from '../../src/contracts/lineage.js';
import { TaskSetError } from '../../src/contracts/task.js';
import { recordLineageRun, setLineageCurrent } from '../../src/lineage/lineage-record.js';
import { addTaskFile, takeTasks } from '../../src/lineage/task-intake.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { getTaskSet } from '../../src/storage/task-sets.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const tasks = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i}`,
    input: { q: `${prefix} ${i}` },
    reference: { answer: i },
  }));
const PREFIX = 'task-sources/intake/';
const adapter = {
  name: 'night-1-abc',
  checkpointKey: `checkpoints/${'a'.repeat(64)}/`,
  sha256: 'a'.repeat(64),
  iteration: 0,
};

// A real S3 server (rclone): task files arrive under a prefix; each run of a lineage takes what is new.
void describe('task intake from an object-store prefix', { timeout: 120_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-task-intake' });
    await store.ensureBucket();
  });
  after(async () => services?.stop());

  void it('takes new files plus round(replayShare × new) older tasks, in arrival order, and refuses duplicate ids', async () => {
    const a = await addTaskFile(store, PREFIX, tasks('a', 4), new Date('2026-12-01T02:00:00.000Z'));
    assert.match(a, /^task-sources\/intake\/20261201T020000000Z-[0-9a-f]{12}\.jsonl$/);
    const first = await takeTasks(store, PREFIX, new Set(), 0.5, 'night-1');
    assert.deepEqual(first?.newTasks, ['a0', 'a1', 'a2', 'a3']);
    assert.deepEqual(first?.replayTasks, [], 'nothing older to replay on the first night');
    assert.deepEqual(first?.newFiles, [a]);

    assert.equal(await takeTasks(store, PREFIX, new Set([a]), 0.5, 'night-2'), null, 'no new file: nothing to take');

    const b = await addTaskFile(store, PREFIX, tasks('b', 2), new Date('2026-12-02T02:00:00.000Z'));
    const second = await takeTasks(store, PREFIX, new Set([a]), 0.5, 'night-2');
    assert.deepEqual(second?.newTasks, ['b0', 'b1']);
    assert.equal(second?.replayTasks.length, 1);
    assert.ok(['a0', 'a1', 'a2', 'a3'].includes(second!.replayTasks[0]!));
    assert.deepEqual(second?.newFiles, [b]);
    assert.deepEqual(
      second?.tasks.map((t) => t.id),
      ['b0', 'b1', ...second!.replayTasks],
    );
    // Replay is capped by what exists, and reproducible for the same run id.
    assert.equal((await takeTasks(store, PREFIX, new Set([a]), 10, 'night-2'))?.replayTasks.length, 4);
    assert.deepEqual((await takeTasks(store, PREFIX, new Set([a]), 0.5, 'night-2'))?.replayTasks, second?.replayTasks);

    await assert.rejects(
      addTaskFile(store, PREFIX, [...tasks('c', 1), ...tasks('a', 1)]),
      (err: unknown) =>
        err instanceof TaskSetError && /task id a0 is already in task-sources\/intake\/20261201/.test(err.message),
    );
    // A file put there by other means with a clashing id fails the intake, naming both files.
    await store.putBytes(`${PREFIX}zz-manual.jsonl`, Buffer.from(`${JSON.stringify(tasks('b', 1)[0])}\n`));
    await assert.rejects(
      takeTasks(store, PREFIX, new Set(), 0, 'night-3'),
      /task id b0 is in both .*20261202.* and task-sources\/intake\/zz-manual\.jsonl/,
    );
    await store.remove(`${PREFIX}zz-manual.jsonl`);
  });

  void it('planRun starts from the lineage policy, pins new + replayed tasks, and reports no new tasks', async () => {
    const act = createLineageActivities({ store });
    const config = parseRunConfig({
      runId: 'calc-night-4',
      lineage: 'calc',
      deploy: { alias: 'calc-prod' },
      agent: { command: ['node', 'agent.mjs'] },
      reward: { kind: 'numeric_match' },
      tasks: { trainPrefix: PREFIX, evalFile: 'eval.jsonl', replayShare: 0.5 },
    });
    const listed: string[] = [];
    for await (const o of store.list(PREFIX)) listed.push(o.key);
    const [a, b] = listed;
    await setLineageCurrent(store, 'calc', { policy: adapter, score: 0.5, runId: 'calc-night-1' });
    await recordLineageRun(store, 'calc', {
      runId: 'calc-night-1',
      startedFrom: { ...adapter, name: 'smollm2-135m-instruct', checkpointKey: null, sha256: null, iteration: null },
      incumbent: { ...adapter, name: 'smollm2-135m-instruct', checkpointKey: null, sha256: null, iteration: null },
      incumbentScore: 0.25,
      promoted: adapter,
      outcome: 'promoted',
      trainSet: null,
      newTasks: 4,
      replayTasks: 0,
      taskFiles: [a!],
      at: 'x',
    });
    const plan = await act.planRun({ config });
    assert.equal(plan.noNewTasks, false);
    assert.deepEqual(plan.startFrom, adapter);
    assert.deepEqual(plan.incumbent, adapter);
    assert.deepEqual(plan.intake?.taskFiles, [b]);
    const pinned = await getTaskSet(store, plan.config.tasks.trainSet!);
    assert.deepEqual(
      pinned.map((t) => t.id),
      ['b0', 'b1', ...plan.intake!.replayTasks],
    );

    await recordLineageRun(store, 'calc', {
      ...(await store.getJson(keys.lineage('calc'), lineageSchema)).runs[0]!,
      runId: 'calc-night-4',
      taskFiles: [b!],
    });
    const none = await act.planRun({ config: { ...config, runId: 'calc-night-5' } });
    assert.equal(none.noNewTasks, true);
    assert.equal(none.config.tasks.trainSet, undefined);

    await assert.rejects(
      act.planRun({
        config: {
          ...config,
          lineage: undefined,
          deploy: undefined,
          model: { ...config.model, startFrom: { run: 'never-ran' } },
        },
      }),
      (err: Error & { type?: string }) =>
        err.type === 'VoltCheckpointNotFound' &&
        /model.startFrom.run: run never-ran promoted no checkpoint/.test(err.message),
    );
  });
});
