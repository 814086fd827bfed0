import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createLineageActivities } from '../../src/activities/lineage.js';
import { loadEnv } from '../../src/config/env.js';
import { createModelServerClient } from '../../src/serving/model-server-client.js';
import { syncDeployAliases } from '../../src/serving/promotion.js';
import { parseRunConfig } from '../../src/config/run.js';
import { FailureType } from '../../src/contracts/failures.js';
import { deployAliasSchema } from '../../src/contracts/lineage.js';
import { DeployAliasError, moveDeployAlias } from '../../src/lineage/deploy-alias.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const ALIAS = 'shared-prod';
const adapter = {
  name: 'night-1-abc',
  checkpointKey: `checkpoints/${'a'.repeat(64)}/`,
  sha256: 'a'.repeat(64),
  iteration: 0,
};
const config = (lineage: string, runId: string) =>
  parseRunConfig({
    runId,
    lineage,
    deploy: { alias: ALIAS },
    agent: { command: ['true'] },
    reward: { kind: 'numeric_match' },
    tasks: { trainFile: 'examples/calculator/tasks/train.jsonl', evalFile: 'examples/calculator/tasks/eval.jsonl' },
  });

/** The planRun rejection: a non-retryable VoltInvalidConfig whose message names the alias and both lineages. */
const refusal = (lineage: string, owner: string) => (err: unknown) => {
  assert.ok(err instanceof ApplicationFailure, String(err));
  assert.equal(err.type, FailureType.InvalidConfig);
  assert.equal(err.nonRetryable, true);
  assert.match(
    err.message,
    new RegExp(`deploy\\.alias: ${ALIAS} already serves lineage ${owner} .*lineage ${lineage} cannot share it`),
  );
  return true;
};

// A real S3 server (rclone): a deploy alias belongs to the first lineage that names it.
void describe('one deploy alias, one lineage', { timeout: 120_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-deploy-alias' });
    await store.ensureBucket();
  });
  after(async () => services?.stop());

  void it('the first run of a lineage claims its alias; a second lineage naming it is refused at planRun, before and after a promotion', async () => {
    const { planRun } = createLineageActivities({ store });
    await planRun({ config: config('calc-a', 'calc-a-night-1') });
    const claimed = await store.getJson(keys.deployAlias(ALIAS), deployAliasSchema);
    assert.deepEqual(
      [claimed.lineage, claimed.current, claimed.history],
      ['calc-a', null, []],
      'claimed, nothing promoted yet',
    );
    // Nothing is served for a claim, so restoring aliases asks no model server for anything (this URL answers nothing).
    const env = loadEnv({ ...services.env, VOLT_MODEL_SERVER_URL: 'http://127.0.0.1:9' }, process.cwd());
    const server = createModelServerClient({
      url: env.VOLT_MODEL_SERVER_URL,
      adminKey: env.VOLT_MODEL_SERVER_ADMIN_KEY,
    });
    assert.deepEqual(await syncDeployAliases({ server, store, dataDir: env.dataDir }), []);

    await assert.rejects(planRun({ config: config('calc-b', 'calc-b-night-1') }), refusal('calc-b', 'calc-a'));
    await planRun({ config: config('calc-a', 'calc-a-night-2') }); // its own lineage again: fine

    // The first promotion keeps the owner and starts the history with the promoted entry (the claim is not an entry).
    await moveDeployAlias(store, ALIAS, 'calc-a', adapter, 'calc-a-night-2');
    const moved = await store.getJson(keys.deployAlias(ALIAS), deployAliasSchema);
    assert.deepEqual(
      [moved.lineage, moved.current?.policy.sha256, moved.history.length],
      ['calc-a', adapter.sha256, 0],
    );
    await assert.rejects(planRun({ config: config('calc-b', 'calc-b-night-2') }), refusal('calc-b', 'calc-a'));
    // Two lineages that claimed at the same moment: the second one's promotion is refused too, and moves nothing.
    await assert.rejects(
      moveDeployAlias(store, ALIAS, 'calc-b', { ...adapter, sha256: 'b'.repeat(64) }, 'calc-b-night-2'),
      DeployAliasError,
    );
    assert.deepEqual(await store.getJson(keys.deployAlias(ALIAS), deployAliasSchema), moved);
  });
});
