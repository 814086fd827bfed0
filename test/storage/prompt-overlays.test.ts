import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { PromptOverlay } from '../../src/contracts/prompt-overlay.js';
import { keys, UnsafeIdError } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import {
  createPromptOverlayStore,
  PromptOverlayError,
  type PromptOverlayStore,
} from '../../src/storage/prompt-overlays.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { promptOverlaySchema } from '../../src/contracts/prompt-overlay.js';
import { CorruptObjectError } from '../../src/storage/errors.js';

const overlay = (runId: string, version: number, template: string): PromptOverlay => ({
  runId,
  version,
  mode: 'replace',
  template,
  origin: { strategy: 'bootstrap', parents: [0], round: 1, note: `v${version}` },
  createdAt: new Date().toISOString(),
});

void describe('prompt overlay store against a real S3 server (rclone serve s3)', () => {
  let services: TestServices;
  let store: ObjectStore;
  let overlays: PromptOverlayStore;

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-overlay-test' });
    await store.ensureBucket();
    overlays = createPromptOverlayStore(store);
  });
  after(async () => services?.stop());

  void it('put is write-once: a second put of the same version returns the first overlay unchanged', async () => {
    const first = await overlays.put(overlay('run-a', 1, 'first {{original}}'));
    const again = await overlays.put(overlay('run-a', 1, 'a different proposal'));
    assert.deepEqual(again, first);
    assert.deepEqual(await overlays.get('run-a', 1), first);
    assert.equal(
      (await store.getJson(keys.promptOverlay('run-a', 1), promptOverlaySchema)).template,
      'first {{original}}',
    );
  });

  void it('get returns null for a version never written; list is in version order', async () => {
    assert.equal(await overlays.get('run-a', 7), null);
    for (const v of [12, 3, 2, 10]) await overlays.put(overlay('run-b', v, `t${v}`));
    assert.deepEqual(
      (await overlays.list('run-b')).map((o) => o.version),
      [2, 3, 10, 12],
    );
    assert.deepEqual(await overlays.list('run-empty'), []);
  });

  void it('promote appends to the history, is idempotent for the active version, and getActive reads it back', async () => {
    await overlays.put(overlay('run-c', 1, 'one'));
    await overlays.put(overlay('run-c', 2, 'two'));
    assert.equal(await overlays.getActive('run-c'), null);
    const base = await overlays.promote('run-c', 0, null);
    assert.equal(base.version, 0);
    const one = await overlays.promote('run-c', 1, 0.5);
    const repeat = await overlays.promote('run-c', 1, 0.9);
    assert.deepEqual(repeat, one, 'a retried promotion changes nothing');
    const two = await overlays.promote('run-c', 2, 0.75);
    assert.deepEqual(await overlays.getActive('run-c'), two);
    assert.equal(two.version, 2);
    assert.equal(two.score, 0.75);
    assert.deepEqual(
      two.history.map((h) => [h.version, h.score]),
      [
        [0, null],
        [1, 0.5],
        [2, 0.75],
      ],
    );
  });

  void it('refuses to promote a version that was never written, and bad overlays, naming the field', async () => {
    await assert.rejects(
      overlays.promote('run-c', 9, 1),
      (e: Error) => e instanceof PromptOverlayError && /version 9 does not exist/.test(e.message),
    );
    await assert.rejects(
      overlays.put(overlay('run-c', 0, 'zero')),
      (e: Error) => e instanceof PromptOverlayError && /version/.test(e.message),
    );
    await assert.rejects(overlays.put({ ...overlay('run-c', 3, 't'), mode: 'overwrite' as never }), (e: Error) =>
      /mode/.test(e.message),
    );
  });

  void it('rejects unsafe run ids before touching the store', async () => {
    for (const bad of ['../other', 'a/b', '', '.hidden']) {
      await assert.rejects(overlays.put(overlay(bad, 1, 't')), UnsafeIdError, bad);
      await assert.rejects(overlays.get(bad, 1), UnsafeIdError, bad);
      await assert.rejects(overlays.list(bad), UnsafeIdError, bad);
      await assert.rejects(overlays.getActive(bad), UnsafeIdError, bad);
      await assert.rejects(overlays.promote(bad, 0, null), UnsafeIdError, bad);
    }
  });

  void it('a corrupt stored overlay is an error naming the key and field, not a silent null', async () => {
    await store.putJson(keys.promptOverlay('run-d', 1), { runId: 'run-d', version: 1, mode: 'replace' });
    await assert.rejects(
      overlays.get('run-d', 1),
      (e: Error) =>
        e instanceof CorruptObjectError && /overlays\/000001\.json/.test(e.message) && e.fields.includes('template'),
    );
  });
});
