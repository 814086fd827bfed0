import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createConfigActivities } from '../../src/activities/config.js';
import { createServingActivities } from '../../src/activities/serving.js';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { loadEnv } from '../../src/config/env.js';
import { parseRunConfig } from '../../src/config/run.js';
import { modelAliasSchema, type PolicyRef } from '../../src/contracts/policy.js';
import { createModelServerClient } from '../../src/serving/model-server-client.js';
import { basePolicy } from '../../src/lineage/start-policy.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { voltInProcess } from '../cli/volt-cli.js';
import { MODEL_ADMIN_KEY, startModelServer } from '../gateway/model-server.js';
import { makeCheckpoints } from '../helpers/lora-adapters.js';
import { scriptedSteps, startScriptedWorkers } from '../helpers/scripted-run.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const root = path.resolve(import.meta.dirname, '../..');
const RUN = 'rollback-base-1';
const TASKS = { trainFile: 'examples/calculator/tasks/train.jsonl', evalFile: 'examples/calculator/tasks/eval.jsonl' };

async function adapters(url: string): Promise<string[]> {
  const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
  return models.data.map((m) => m.id);
}

// Real S3, the real Python model server with an admin key and a real LoRA adapter, the real serving activities: the
// unload that rollback-to-base needs must carry the admin key like the load does. The second case adds real Temporal,
// the real trainingRun workflow and `volt rollback --to base`; its rollouts, rewards, batch and update are FAKE scripted
// activities (the update returns the real adapter), since what is under test is the serving side of the rollback.
void describe('rollback to the base model on a real model server', { timeout: 900_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  let model: Awaited<ReturnType<typeof startModelServer>>;
  let adapter: PolicyRef | undefined;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-rollback-base-'));

  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    model = await startModelServer({ readyMs: 600_000 });
    store = createObjectStore(loadEnv({ ...services.env, VOLT_DATA_DIR: dir }, root));
    await store.ensureBucket();
    [adapter] = await makeCheckpoints(store, dir, 1);
  });
  after(async () => {
    await model?.stop();
    await services?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  void it('unloads <run>-best from the server and points the alias at the base model', async () => {
    const env = loadEnv(
      {
        ...services.env,
        VOLT_DATA_DIR: dir,
        VOLT_MODEL_SERVER_URL: `${model.url}/`,
        VOLT_MODEL_SERVER_ADMIN_KEY: MODEL_ADMIN_KEY,
      },
      root,
    );
    const modelServer = createModelServerClient({
      url: env.VOLT_MODEL_SERVER_URL,
      adminKey: env.VOLT_MODEL_SERVER_ADMIN_KEY,
    });
    const activities = createServingActivities({ env, store, modelServer });
    const mock = () => new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
    const config = parseRunConfig({
      runId: RUN,
      agent: { command: ['true'] },
      tasks: TASKS,
      reward: { kind: 'numeric_match' },
    });
    const best = `${RUN}-best`;

    await mock().run(activities.promoteCheckpoint, { config, iteration: 0, policy: adapter!, score: 0.5 });
    assert.ok((await adapters(model.url)).includes(best), 'the promoted adapter is served as <run>-best');

    const base = basePolicy(config);
    const to = { policy: base, score: 0.2, iteration: null };
    await mock().run(activities.rollbackCheckpoint, { config, to });
    const alias = await store.getJson(keys.modelAlias(RUN, 'best'), modelAliasSchema);
    assert.deepEqual([alias.current.policy, alias.servedAs], [base, base.name]);
    assert.equal(alias.history.at(-1)?.policy.sha256, adapter!.sha256);
    const served = await adapters(model.url);
    assert.ok(!served.includes(best), `<run>-best is gone from the server (serves ${served.join(', ')})`);
    assert.ok(served.includes(base.name), 'the base model is still served');

    // A retry (the update's activity re-run) finds the alias moved and the adapter already unloaded.
    await mock().run(activities.rollbackCheckpoint, { config, to });
    assert.ok(!(await adapters(model.url)).includes(best));
  });
  void it('volt rollback <run> --to base on a promoted run unloads <run>-best', async () => {
    const vars = {
      ...services.env,
      VOLT_DATA_DIR: dir,
      VOLT_MODEL_SERVER_URL: model.url,
      VOLT_MODEL_SERVER_ADMIN_KEY: MODEL_ADMIN_KEY,
    };
    const env = loadEnv(vars, root);
    const modelServer = createModelServerClient({ url: model.url, adminKey: MODEL_ADMIN_KEY });
    // The base scores 0.2 held out, iteration 0's candidate 0.5 (promoted), later ones 0.1.
    const evalScore = (label: string, iteration: number) => (label === 'base' ? 0.2 : iteration ? 0.1 : 0.5);
    const scripted = scriptedSteps({ holdAt: 1, evalScore, trained: () => adapter! });
    const { reached, release } = scripted;
    const activities = {
      ...createConfigActivities({ taskSets: new PinnedTaskSets(store, root) }),
      ...createServingActivities({ env, store, modelServer }),
      ...scripted.activities,
    };
    const config = parseRunConfig({
      runId: 'rollback-base-cli',
      iterations: 2,
      agent: { command: ['true'] },
      tasks: TASKS,
      rollouts: { groupSize: 2, tasksPerIteration: 2 },
      reward: { kind: 'numeric_match' },
      eval: { tasks: 2, promoteMargin: 0 },
    });
    const best = `${config.runId}-best`;
    const workers = await startScriptedWorkers(services, activities);
    const { client, close } = await connectClient(env);
    try {
      const { handle } = await startTrainingRun(client, config);
      await reached; // iteration 0 promoted the adapter: the server serves it as <run>-best
      assert.ok((await adapters(model.url)).includes(best));

      const back = await voltInProcess(['rollback', config.runId, '--to', 'base'], vars);
      assert.equal(back.code, 0, back.stderr);
      assert.match(back.stdout, /best is now smollm2-135m-instruct \(base model, score 0\.200\)/);
      assert.ok(!(await adapters(model.url)).includes(best), '<run>-best is gone from the server');
      release();
      await handle.result();
    } finally {
      release();
      await workers.stop();
      await close();
    }
  });
});
