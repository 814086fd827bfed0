import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Connection } from '@temporalio/client';
import { s3Client } from '../../src/stack/s3.js';
import { isOurProcess, readRecord } from '../../src/stack/processes.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

void describe('startTestServices', () => {
  let services: TestServices;
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
  });
  after(async () => services?.stop());

  void it('serves Temporal with Volt search attributes registered', async () => {
    const connection = await Connection.connect({ address: services.temporalAddress });
    try {
      const res = await connection.operatorService.listSearchAttributes({ namespace: services.namespace });
      assert.equal(res.customAttributes?.VoltRunId, 2, 'VoltRunId is Keyword'); // enum IndexedValueType.KEYWORD = 2
      assert.equal(res.customAttributes?.VoltIteration, 3, 'VoltIteration is Int');
      assert.equal(res.customAttributes?.VoltBestScore, 4, 'VoltBestScore is Double');
    } finally {
      await connection.close();
    }
  });

  void it('serves S3 with the bucket created, round-tripping an object', async () => {
    const client = s3Client(services.s3);
    assert.equal(await client.bucketExists(services.s3.bucket), true);
    await client.putObject(services.s3.bucket, 'hello/world.txt', Buffer.from('volt'));
    const body = await client.getObject(services.s3.bucket, 'hello/world.txt');
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), 'volt');
    assert.equal(services.env.VOLT_S3_ENDPOINT, services.s3.endpoint);
  });

  void it('rejects a wrong S3 secret', async () => {
    const client = s3Client({ ...services.s3, secretKey: 'not-the-secret' });
    await assert.rejects(client.bucketExists(services.s3.bucket));
  });

  void it('stop() kills both processes', async () => {
    const records = ['temporal', 's3'].map((n) => readRecord(services.dataDir, n));
    assert.ok(records.every((r) => r && isOurProcess(r)));
    await services.stop();
    assert.ok(records.every((r) => r && !isOurProcess(r)));
  });
});
