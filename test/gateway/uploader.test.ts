import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpanUploader } from '../../src/gateway/recording/uploader.js';
import { WriteAheadLog } from '../../src/gateway/recording/wal.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { startStore } from './harness.js';

let services: TestServices;
let store: ObjectStore;
before(async () => ({ services, store } = await startStore()));
after(async () => services?.stop());

const inStore = async (key: string) => (await store.getJsonOrNull(key)) !== null;

async function walWith(keys: string[]) {
  const wal = new WriteAheadLog(fs.mkdtempSync(path.join(services.dataDir, 'upl-')));
  await wal.open();
  return { wal, entries: await Promise.all(keys.map((k, i) => wal.append(k, JSON.stringify({ i })))) };
}

void describe('span uploader', () => {
  void it('holds uploads back while calls are in flight, uploads a flushed prefix first, and the rest once idle', async () => {
    const { wal, entries } = await walWith(['upl/a/0.json', 'upl/b/0.json', 'upl/a/1.json']);
    let idleFor = 0;
    const uploader = new SpanUploader(store, wal, {
      maxDeferredBytes: 1000,
      idleForMs: () => idleFor,
      idleAfterMs: 10,
    });
    for (const e of entries) uploader.enqueue(e);
    await sleep(100);
    assert.equal(uploader.pendingCount, 3, 'nothing uploaded while busy');
    assert.equal(await inStore('upl/a/0.json'), false);

    await uploader.flush('upl/a/');
    assert.ok(
      (await inStore('upl/a/0.json')) && (await inStore('upl/a/1.json')),
      'the flushed rollout is in the store',
    );
    assert.equal(await inStore('upl/b/0.json'), false, 'the other rollout still waits');

    idleFor = 1_000;
    for (let i = 0; i < 100 && uploader.pendingCount > 0; i++) await sleep(20);
    assert.equal(uploader.pendingCount, 0);
    assert.deepEqual(await store.getJson('upl/b/0.json'), { i: 1 });
    await wal.close();
  });

  void it('past the backlog bound or the age bound it uploads while busy, a few puts at a time', async () => {
    const { wal, entries } = await walWith(['cap/0.json', 'cap/1.json', 'cap/2.json', 'cap/3.json', 'cap/4.json']);
    let running = 0;
    let most = 0;
    // The real store, counting how many puts overlap.
    const counting: ObjectStore = Object.assign(Object.create(store) as ObjectStore, {
      putBytes: async (...args: Parameters<ObjectStore['putBytes']>) => {
        most = Math.max(most, ++running);
        try {
          return await store.putBytes(...args);
        } finally {
          running--;
        }
      },
    });
    // Each entry is 7 bytes of JSON ({"i":0}): the bound is 3 entries' worth.
    const byCount = new SpanUploader(counting, wal, {
      maxDeferredBytes: 21,
      busyConcurrency: 1,
      idleForMs: () => 0,
      maxDeferMs: 60_000,
    });
    for (const e of entries) byCount.enqueue(e);
    for (let i = 0; i < 100 && byCount.pendingCount > 2; i++) await sleep(20);
    await sleep(100);
    assert.equal(byCount.pendingCount, 2, 'uploaded down to below the bound, then held the rest');
    assert.equal(await inStore('cap/0.json'), true, 'oldest first');
    assert.equal(most, 1, 'one put at a time while busy');
    byCount.stop();

    const { wal: wal2, entries: aged } = await walWith(['age/0.json']);
    const byAge = new SpanUploader(store, wal2, {
      maxDeferredBytes: 1000,
      idleForMs: () => 0,
      maxDeferMs: 50,
      idleAfterMs: 10,
    });
    byAge.enqueue(aged[0]!);
    for (let i = 0; i < 100 && byAge.pendingCount > 0; i++) await sleep(20);
    assert.equal(await inStore('age/0.json'), true, 'uploaded once it had waited maxDeferMs');
    await Promise.all([wal.close(), wal2.close()]);
  });

  void it('with maxDeferredBytes 0 uploads each entry at once, busy or not', async () => {
    const { wal, entries } = await walWith(['now/0.json']);
    const uploader = new SpanUploader(store, wal, { maxDeferredBytes: 0, idleForMs: () => 0, maxDeferMs: 60_000 });
    uploader.enqueue(entries[0]!);
    for (let i = 0; i < 100 && uploader.pendingCount > 0; i++) await sleep(20);
    assert.equal(await inStore('now/0.json'), true);
    await wal.close();
  });
});
