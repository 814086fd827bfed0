import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { loadEnv } from '../../src/config/env.js';
import { freePort } from '../../src/stack/ports.js';
import {
  BucketNotFoundError,
  CorruptObjectError,
  ObjectNotFoundError,
  ObjectStoreError,
  ObjectStoreUnavailableError,
} from '../../src/storage/errors.js';
import { sha256Bytes } from '../../src/storage/hash.js';
import { UnsafeKeyError } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

void describe('ObjectStore against a real S3 server (rclone serve s3)', () => {
  let services: TestServices;
  let store: ObjectStore;

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-store-test' });
    await store.ensureBucket();
    await store.ensureBucket(); // idempotent
  });
  after(async () => services?.stop());

  void it('puts and gets JSON, returning the sha256 of the stored bytes', async () => {
    const put = await store.putJson('t/json/a.json', { a: 1, b: ['x'] });
    assert.equal(put.sha256, sha256Bytes('{"a":1,"b":["x"]}'));
    assert.equal(put.size, 17);
    assert.deepEqual(await store.getJson('t/json/a.json'), { a: 1, b: ['x'] });
    const info = await store.stat('t/json/a.json');
    assert.equal(info?.size, 17);
    assert.equal(info?.sha256, put.sha256);
  });

  void it('overwrites by key, so a re-run write is idempotent', async () => {
    await store.putJson('t/idem/x.json', { v: 1 });
    const first = await store.putJson('t/idem/x.json', { v: 2 });
    const second = await store.putJson('t/idem/x.json', { v: 2 });
    assert.equal(first.sha256, second.sha256);
    assert.deepEqual(await store.getJson('t/idem/x.json'), { v: 2 });
    assert.equal((await collect(store.list('t/idem/'))).length, 1);
  });

  void it('validates JSON with a schema and names the bad path', async () => {
    await store.putJson('t/json/shape.json', { count: 'three' });
    const schema = z.object({ count: z.number() });
    await assert.rejects(
      store.getJson('t/json/shape.json', schema),
      (e: Error) => e instanceof CorruptObjectError && /count/.test(e.message),
    );
    await store.putBytes('t/json/broken.json', Buffer.from('{"a":'));
    await assert.rejects(store.getJson('t/json/broken.json'), CorruptObjectError);
  });

  void it('raises typed errors for missing objects and returns null where asked', async () => {
    await assert.rejects(
      store.getJson('t/missing.json'),
      (e: Error) =>
        e instanceof ObjectNotFoundError && e.key === 't/missing.json' && /t\/missing\.json/.test(e.message),
    );
    await assert.rejects(store.getStream('t/missing.bin'), ObjectNotFoundError);
    await assert.rejects(store.getFile('t/missing.bin', `${services.dataDir}/never`), ObjectNotFoundError);
    assert.equal(await store.getJsonOrNull('t/missing.json'), null);
    assert.equal(await store.stat('t/missing.json'), null);
    await store.remove('t/missing.json'); // deleting what is not there succeeds
  });

  void it('raises BucketNotFoundError before ensureBucket and a clear error when the server is down', async () => {
    const other = createObjectStore({ ...services.s3, bucket: 'volt-never-made' });
    await assert.rejects(other.getJson('a.json'), BucketNotFoundError);
    const down = createObjectStore({ ...services.s3, endpoint: `http://127.0.0.1:${await freePort('127.0.0.1')}` });
    await assert.rejects(
      down.putJson('a.json', {}),
      (e: Error) => e instanceof ObjectStoreUnavailableError && /ECONNREFUSED/.test(e.message),
    );
  });

  void it('is created from the parsed VOLT_S3_* environment and creates buckets concurrently without errors', async () => {
    const fromEnv = createObjectStore(loadEnv({ ...services.env, VOLT_S3_BUCKET: 'volt-env-bucket' }));
    assert.equal(fromEnv.bucket, 'volt-env-bucket');
    await Promise.all([fromEnv.ensureBucket(), fromEnv.ensureBucket(), fromEnv.ensureBucket()]);
    await fromEnv.putJson('from-env.json', { ok: true });
    assert.deepEqual(await fromEnv.getJson('from-env.json'), { ok: true });
    assert.equal(await store.stat('from-env.json'), null, 'a different bucket is a different namespace');
  });

  void it('refuses unsafe keys before any request', async () => {
    for (const bad of ['../x', '/abs', 'a//b', '']) {
      await assert.rejects(store.putJson(bad, {}), UnsafeKeyError);
      await assert.rejects(store.stat(bad), UnsafeKeyError);
    }
  });

  void it('stores bytes from a buffer, a stream and an async iterable, checking a declared size', async () => {
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    const fromBuf = await store.putBytes('t/bytes/buf.bin', bytes);
    const fromStream = await store.putBytes(
      't/bytes/stream.bin',
      Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]),
      bytes.length,
    );
    async function* parts() {
      yield bytes.subarray(0, 5);
      yield bytes.subarray(5);
    }
    const fromIter = await store.putBytes('t/bytes/iter.bin', parts());
    for (const r of [fromBuf, fromStream, fromIter]) {
      assert.equal(r.sha256, sha256Bytes(bytes));
      assert.deepEqual(await store.getBytes(r.key), bytes);
    }
    await assert.rejects(
      store.putBytes('t/bytes/short.bin', Readable.from([bytes]), bytes.length + 1),
      /size 70001 but stream had 70000/,
    );
    assert.equal(await store.stat('t/bytes/short.bin'), null);
  });

  void it('stores objects above the minio-js multipart threshold (64 MiB) in one PUT', async () => {
    const big = Buffer.alloc(65 * 2 ** 20, 0x5a);
    const put = await store.putBytes('t/big/65mib.bin', big);
    assert.equal(put.sha256, sha256Bytes(big));
    const info = await store.stat(put.key);
    assert.equal(info?.size, big.length);
    assert.equal(info?.sha256, put.sha256);
    await store.remove(put.key);
  });

  void it('lists a prefix in key order with sizes, and removes by key and by prefix', async () => {
    const names = ['b.json', 'a.json', 'c/d.json', 'a0.json', 'c/a.json'];
    for (const n of names) await store.putJson(`t/list/${n}`, { n });
    await store.putJson('t/listing-sibling.json', {}); // shares the string prefix 't/list' but not the folder
    const listed = await collect(store.list('t/list/'));
    assert.deepEqual(
      listed.map((o) => o.key),
      ['a.json', 'a0.json', 'b.json', 'c/a.json', 'c/d.json'].map((n) => `t/list/${n}`),
    );
    assert.ok(listed.every((o) => o.size === JSON.stringify({ n: o.key.slice(7) }).length));
    await store.remove('t/list/b.json');
    assert.equal(await store.stat('t/list/b.json'), null);
    assert.equal(await store.removePrefix('t/list/c/'), 2);
    assert.deepEqual(
      (await collect(store.list('t/list/'))).map((o) => o.key),
      ['t/list/a.json', 't/list/a0.json'],
    );
    await assert.rejects(store.removePrefix('t/list'), ObjectStoreError);
    assert.equal(await store.removePrefix('t/list/'), 2);
    assert.ok(await store.stat('t/listing-sibling.json'));
    assert.equal(await store.removePrefix('t/nothing-here/'), 0);
  });

  void it('removes prefixes larger than one 1000-key delete request', async () => {
    const n = 1005;
    for (let i = 0; i < n; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, n - i) }, (_, j) =>
          store.putBytes(`t/many/${String(i + j).padStart(4, '0')}`, Buffer.from('x')),
        ),
      );
    }
    assert.equal((await collect(store.list('t/many/'))).length, n);
    assert.equal(await store.removePrefix('t/many/'), n);
    assert.deepEqual(await collect(store.list('t/many/')), []);
  });
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
