import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { loadTemporalConfig } from '../../src/stack/temporal-config.js';
import { voltInProcess } from '../cli/volt-cli.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const NAMESPACE = 'volt-team-a';

/**
 * `volt temporal setup` against a real Temporal dev server, on a namespace the server was not started with: it
 * registers the namespace and Volt's search attributes, a second call changes nothing, and then a Volt workflow run
 * in that namespace (`volt smoke`, whose workflow upserts VoltRunId and VoltPhase) completes and is found by them.
 */
void describe('volt temporal setup on a non-default namespace', () => {
  let services: TestServices;
  let connection: Connection;
  let env: Record<string, string>;
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    connection = await Connection.connect({ address: services.temporalAddress });
    env = { ...services.env, VOLT_DATA_DIR: services.dataDir, VOLT_TEMPORAL_NAMESPACE: NAMESPACE };
  });
  after(async () => {
    await connection?.close();
    await services?.stop();
  });

  void it('registers the namespace and the search attributes, idempotently, and a run there uses them', async () => {
    await assert.rejects(
      connection.workflowService.describeNamespace({ namespace: NAMESPACE }),
      (e: unknown) => isGrpcServiceError(e) && e.code === 5,
      'the dev server does not know the namespace yet',
    );
    const names = Object.keys(loadTemporalConfig().searchAttributes);

    const first = await voltInProcess(['temporal', 'setup'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`namespace ${NAMESPACE} on ${services.temporalAddress}: registered`));
    assert.match(first.stdout, new RegExp(`search attributes added: ${names.join(', ')}\\n`));

    const again = await voltInProcess(['temporal', 'setup'], env);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /: already there\nsearch attributes added: none\n/);
    assert.match(again.stdout, new RegExp(`search attributes already there: ${names.join(', ')}$`));

    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: NAMESPACE });
    // IndexedValueType: Keyword 2, Int 3, Double 4.
    assert.deepEqual(Object.fromEntries(names.map((n) => [n, customAttributes?.[n]])), {
      VoltRunId: 2,
      VoltIteration: 3,
      VoltPhase: 2,
      VoltBestScore: 4,
      VoltLineage: 2,
    });

    // A Volt workflow in that namespace: its worker and client take the namespace from VOLT_TEMPORAL_NAMESPACE.
    const smoke = await voltInProcess(['smoke'], env);
    assert.equal(smoke.code, 0, smoke.stderr);
    const workflowId = /workflow (\S+) completed/.exec(smoke.stdout)?.[1];
    assert.ok(workflowId, smoke.stdout);
    assert.match(smoke.stdout, new RegExp(`/namespaces/${NAMESPACE}/workflows/${workflowId}`));
    const client = new Client({ connection, namespace: NAMESPACE });
    const described = await client.workflow.getHandle(workflowId).describe();
    assert.equal(described.status.name, 'COMPLETED');
    const runId = workflowId.replace(/^volt-/, '');
    assert.deepEqual(described.searchAttributes.VoltRunId, [runId]);
    let found: string[] = [];
    for (let i = 0; i < 50 && found.length === 0; i++) {
      found = [];
      for await (const w of client.workflow.list({ query: `VoltRunId = '${runId}' AND VoltPhase = 'done'` }))
        found.push(w.workflowId);
      if (found.length === 0) await sleep(200);
    }
    assert.deepEqual(found, [workflowId]);
  });

  void it('refuses a namespace that has one of the attributes with another type, naming it', async () => {
    const namespace = 'volt-team-b';
    const first = await voltInProcess(['temporal', 'setup', '--namespace', namespace], env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /namespace volt-team-b on .*: registered/, '--namespace wins over the env');
    const other = 'volt-team-c';
    await connection.workflowService.registerNamespace({
      namespace: other,
      workflowExecutionRetentionPeriod: { seconds: 86400 } as never,
    });
    for (let i = 0; i < 50; i++) {
      try {
        await connection.operatorService.addSearchAttributes({ namespace: other, searchAttributes: { VoltPhase: 3 } });
        break;
      } catch (e) {
        if (!(isGrpcServiceError(e) && e.code === 5)) throw e;
        await sleep(200);
      }
    }
    const refused = await voltInProcess(['temporal', 'setup', '--namespace', other], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /namespace volt-team-c has search attribute VoltPhase as Int, Volt needs Keyword/);
  });

  void it('an action other than setup is a usage error', async () => {
    const r = await voltInProcess(['temporal', 'setpu'], env);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown temporal action "setpu"/);
  });
});
