import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createConfigActivities } from '../../src/activities/config.js';
import { createLineageActivities } from '../../src/activities/lineage.js';
import { createServingActivities } from '../../src/activities/serving.js';
import { createModelServerClient } from '../../src/serving/model-server-client.js';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { loadEnv, type VoltEnv } from '../../src/config/env.js';
import { parseRunConfig } from '../../src/config/run.js';
import { deployAliasSchema, lineageSchema } from '../../src/contracts/lineage.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { voltInProcess } from '../cli/volt-cli.js';
import { MODEL_ADMIN_KEY, startModelServer } from '../gateway/model-server.js';
import { makeCheckpoints } from '../helpers/lora-adapters.js';
import { scriptedSteps, startScriptedWorkers } from '../helpers/scripted-run.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const root = path.resolve(import.meta.dirname, '../..');
const LINEAGE = 'calc-serving';
const ALIAS = 'calc-serving-prod';
/** Held-out scores: the incumbent (base) 0.2; iteration 0's candidate 0.5 and iteration 1's 0.6 (both promoted); later 0.4. */
const evalScore = (label: string, iteration: number) =>
  label === 'base' ? 0.2 : iteration === 0 ? 0.5 : iteration === 1 ? 0.6 : 0.4;

async function served(url: string, name: string): Promise<string | null> {
  const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string; root: string }[] };
  const m = models.data.find((d) => d.id === name);
  return m ? path.basename(m.root) : null;
}

async function logprobs(url: string, model: string): Promise<number[]> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'What is 17 times 3?' }],
      max_tokens: 8,
      temperature: 0,
      logprobs: true,
    }),
  });
  assert.equal(r.status, 200, await r.clone().text());
  const body = (await r.json()) as { choices: { logprobs: { content: { logprob: number }[] } }[] };
  return body.choices[0]!.logprobs.content.map((c) => c.logprob);
}

async function loadDirect(url: string, name: string, dir: string) {
  const r = await fetch(`${url}/v1/load_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MODEL_ADMIN_KEY}` },
    body: JSON.stringify({ lora_name: name, lora_path: dir, load_inplace: true }),
  });
  assert.equal(r.status, 200, await r.text());
}

// Real Temporal, S3, the real trainingRun workflows, the real serving and lineage activities, the real model server
// with real LoRA adapters; rollouts, rewards, batch and update are FAKE scripted activities (the trained checkpoints
// are the real adapters made up front), since what is under test is where rollback moves the lineage and its alias.
void describe("a lineage's deploy alias on a real model server", { timeout: 1_800_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  let env: Readonly<VoltEnv>;
  let model: Awaited<ReturnType<typeof startModelServer>>;
  let ckpt: PolicyRef[];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-alias-serving-'));
  const vars = () => ({
    ...services.env,
    VOLT_MODEL_SERVER_URL: model.url,
    VOLT_MODEL_SERVER_ADMIN_KEY: MODEL_ADMIN_KEY,
  });

  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    model = await startModelServer({ readyMs: 600_000 });
    env = loadEnv(vars(), root);
    store = createObjectStore(env);
    await store.ensureBucket();
    ckpt = await makeCheckpoints(store, dir, 2);
  });
  after(async () => {
    await model?.stop();
    await services?.stop();
  });

  void it("volt rollback on a lineage run moves the lineage's current policy and the deploy alias the model server serves", async () => {
    const modelServer = createModelServerClient({ url: model.url, adminKey: MODEL_ADMIN_KEY });
    const scripted = scriptedSteps({ holdAt: 2, evalScore, trained: (i) => ckpt[Math.min(i, 1)]! });
    const { reached, release } = scripted;
    const activities = {
      ...createConfigActivities({ taskSets: new PinnedTaskSets(store, root) }),
      ...createLineageActivities({ store }),
      ...createServingActivities({ env, store, modelServer }),
      ...scripted.activities,
    };
    const config = parseRunConfig({
      runId: 'calc-serving-night-1',
      lineage: LINEAGE,
      deploy: { alias: ALIAS },
      iterations: 3,
      agent: { command: ['true'] },
      tasks: { trainFile: 'examples/calculator/tasks/train.jsonl', evalFile: 'examples/calculator/tasks/eval.jsonl' },
      rollouts: { groupSize: 2, tasksPerIteration: 2 },
      reward: { kind: 'numeric_match' },
      eval: { tasks: 2, promoteMargin: 0 },
    });
    const workers = await startScriptedWorkers(services, activities);
    const { client, close } = await connectClient(env);
    const [a, b] = [ckpt[0]!, ckpt[1]!];
    let status: RunStatus;
    try {
      const { handle } = await startTrainingRun(client, config);
      await reached; // iterations 0 and 1 promoted A then B: the lineage and its alias are at B
      assert.equal((await store.getJson(keys.lineage(LINEAGE), lineageSchema)).current?.policy.sha256, b.sha256);
      assert.equal(await served(model.url, ALIAS), b.sha256);

      const base = await voltInProcess(['rollback', config.runId, '--to', 'base'], vars());
      assert.notEqual(base.code, 0);
      assert.match(base.stderr, new RegExp(`deploy alias ${ALIAS} cannot serve the bare base model`));
      const back = await voltInProcess(['rollback', config.runId, '--to', 'previous'], vars());
      assert.equal(back.code, 0, back.stderr);
      assert.match(back.stdout, /best is now adapter-0 \(promoted at iteration 0, score 0\.500\)/);

      // Both moved to A when the update returned: the lineage record, the alias record and what the server serves.
      const lineage = await store.getJson(keys.lineage(LINEAGE), lineageSchema);
      assert.deepEqual(
        [lineage.current?.policy.sha256, lineage.current?.score, lineage.current?.runId],
        [a.sha256, 0.5, config.runId],
      );
      const alias = await store.getJson(keys.deployAlias(ALIAS), deployAliasSchema);
      assert.equal(alias.current?.policy.sha256, a.sha256);
      assert.deepEqual(
        alias.history.map((h) => h.policy.sha256),
        [a.sha256, b.sha256],
      );
      assert.equal(await served(model.url, ALIAS), a.sha256);
      await loadDirect(model.url, 'direct-a', path.join(dir, 'adapter-0'));
      assert.deepEqual(await logprobs(model.url, ALIAS), await logprobs(model.url, 'direct-a'));
      release(); // iteration 2 scores 0.4 < A's 0.5: not promoted, so A stays
      status = await handle.result();
    } finally {
      release();
      await workers.stop();
      await close();
    }
    assert.deepEqual(
      status.history.map((h) => h.promoted),
      [true, true, false],
    );
    assert.equal(status.best?.policy.sha256, a.sha256);
    const record = await store.getJson(keys.lineage(LINEAGE), lineageSchema);
    assert.equal(record.current?.policy.sha256, a.sha256);
    assert.deepEqual([record.runs[0]?.outcome, record.runs[0]?.promoted?.sha256], ['promoted', a.sha256]);
  });

  void it('a model server started directly (not by volt serve) serves the aliases again after volt deploy restore-aliases', async () => {
    const port = Number(new URL(model.url).port);
    await model.stop();
    model = await startModelServer({ port, readyMs: 600_000 }); // python -m volt_trainer.serve: knows no alias
    assert.equal(await served(model.url, ALIAS), null);
    const alias = await store.getJson(keys.deployAlias(ALIAS), deployAliasSchema);
    const sha = alias.current!.policy.sha256!;

    // A CLI on another machine: its own data dir, so it downloads the adapter from S3 (checked against the manifest).
    const cliDir = mkdtempSync(path.join(os.tmpdir(), 'volt-restore-cli-'));
    const listed = await voltInProcess(['deploy', 'list'], { ...vars(), VOLT_DATA_DIR: cliDir });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(
      listed.stdout,
      new RegExp(`${ALIAS}  lineage ${LINEAGE}  → adapter-0 \\(${sha.slice(0, 12)}, run calc-serving-night-1\\)`),
    );
    const restored = await voltInProcess(['deploy', 'restore-aliases'], { ...vars(), VOLT_DATA_DIR: cliDir });
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, new RegExp(`deploy aliases served by ${model.url}: ${ALIAS} → adapter-0`));
    assert.equal(await served(model.url, ALIAS), sha);
    assert.equal(
      path.dirname(
        ((await (await fetch(`${model.url}/v1/models`)).json()) as { data: { id: string; root: string }[] }).data.find(
          (d) => d.id === ALIAS,
        )!.root,
      ),
      path.join(cliDir, 'adapters'),
    );
    await loadDirect(model.url, 'direct-current', path.join(dir, 'adapter-0'));
    assert.deepEqual(await logprobs(model.url, ALIAS), await logprobs(model.url, 'direct-current'));
    assert.notDeepEqual(await logprobs(model.url, ALIAS), await logprobs(model.url, 'smollm2-135m-instruct'));
    // Idempotent: again, the same adapter under the same name.
    assert.equal((await voltInProcess(['deploy', 'restore-aliases'], { ...vars(), VOLT_DATA_DIR: cliDir })).code, 0);
    assert.equal(await served(model.url, ALIAS), sha);
  });
});
