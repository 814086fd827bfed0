import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ObjectStoreError } from '../../src/storage/errors.js';
import { sha256Dir } from '../../src/storage/hash.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

/** A directory shaped like a PEFT LoRA adapter, with a nested folder and binary weights. */
function writeAdapter(dir: string, weightsSeed: number): void {
  fs.mkdirSync(path.join(dir, 'nested'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'adapter_config.json'),
    JSON.stringify({ r: 8, lora_alpha: 16, target_modules: ['q_proj', 'v_proj'] }),
  );
  fs.writeFileSync(
    path.join(dir, 'adapter_model.safetensors'),
    Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * weightsSeed) % 256)),
  );
  fs.writeFileSync(path.join(dir, 'nested', 'tokenizer notes.txt'), 'spaces and unicode: ü\n');
}

void describe('content-addressed directories against a real S3 server', () => {
  let services: TestServices;
  let store: ObjectStore;
  let tmp: string;

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore(services.s3);
    await store.ensureBucket();
    tmp = fs.mkdtempSync(path.join(services.dataDir, 'dirs-'));
  });
  after(async () => services?.stop());

  void it('uploads under keys.checkpoint(sha) and downloads the same bytes back', async () => {
    const src = path.join(tmp, 'a');
    writeAdapter(src, 7);
    const up = await store.putDirContentAddressed(src);
    assert.equal(up.prefix, keys.checkpoint(up.sha256));
    assert.equal(up.reused, false);
    assert.deepEqual(
      up.files.map((f) => f.path),
      ['adapter_config.json', 'adapter_model.safetensors', 'nested/tokenizer notes.txt'],
    );

    const listed = [];
    for await (const o of store.list(up.prefix)) listed.push(o.key.slice(up.prefix.length));
    assert.deepEqual(
      listed,
      up.files.map((f) => f.path),
    );

    const out = path.join(tmp, 'a-copy');
    const got = await store.getDir(up.prefix, out);
    assert.equal(got.files.length, 3);
    for (const f of up.files)
      assert.deepEqual(fs.readFileSync(path.join(out, f.path)), fs.readFileSync(path.join(src, f.path)));
    assert.equal((await sha256Dir(out)).sha256, up.sha256);

    const verified = path.join(tmp, 'a-verified');
    const manifest = await store.getCheckpoint(up.sha256, verified);
    assert.deepEqual(manifest.files, up.files);
  });

  void it('gives the same address to the same content and skips the upload the second time', async () => {
    const a = path.join(tmp, 'same-1');
    const b = path.join(tmp, 'same-2');
    writeAdapter(a, 3);
    writeAdapter(b, 3);
    fs.utimesSync(path.join(b, 'adapter_config.json'), new Date(2001, 1, 1), new Date(2001, 1, 1)); // mtimes do not count
    const first = await store.putDirContentAddressed(a);
    const second = await store.putDirContentAddressed(b);
    assert.equal(second.sha256, first.sha256);
    assert.equal(second.reused, true);

    const c = path.join(tmp, 'changed');
    writeAdapter(c, 5);
    assert.notEqual((await store.putDirContentAddressed(c)).sha256, first.sha256);
    fs.renameSync(path.join(a, 'nested'), path.join(a, 'moved'));
    assert.notEqual((await sha256Dir(a)).sha256, first.sha256, 'a renamed file changes the address');
  });

  void it('detects a tampered checkpoint file on download', async () => {
    const src = path.join(tmp, 'tamper');
    writeAdapter(src, 11);
    const up = await store.putDirContentAddressed(src);
    await store.putBytes(`${up.prefix}adapter_model.safetensors`, Buffer.from('not the weights'));
    await assert.rejects(
      store.getCheckpoint(up.sha256, path.join(tmp, 'tamper-out')),
      /adapter_model\.safetensors has sha256 .* manifest says/,
    );
  });

  void it('refuses an empty directory and prefixes without a trailing slash', async () => {
    const empty = path.join(tmp, 'empty');
    fs.mkdirSync(empty);
    await assert.rejects(store.putDirContentAddressed(empty), ObjectStoreError);
    await assert.rejects(store.getDir('checkpoints', path.join(tmp, 'x')), /ending in '\/'/);
  });
});
