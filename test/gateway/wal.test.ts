import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { sseData } from '../../src/gateway/upstream/sse.js';
import { WriteAheadLog } from '../../src/gateway/recording/wal.js';
import { entryRef, readEntries } from '../../src/gateway/recording/wal-segment.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-wal-test-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));
const freshDir = () => fs.mkdtempSync(path.join(root, 'wal-'));
const files = (dir: string) => fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl'));

void describe('write-ahead log', () => {
  void it("'fsync' mode group-commits concurrent appends into fewer fdatasync rounds, all written", async () => {
    const dir = freshDir();
    const wal = new WriteAheadLog(dir, { sync: 'fsync' });
    await wal.open();
    const entries = await Promise.all(
      Array.from({ length: 200 }, (_, i) => wal.append(`k/${i}`, JSON.stringify({ i }))),
    );
    assert.equal(entries.length, 200);
    assert.ok(wal.commits >= 1 && wal.commits < 200, `expected batching, got ${wal.commits} commits for 200 appends`);
    const lines = fs
      .readFileSync(path.join(dir, files(dir)[0]!), 'utf8')
      .trim()
      .split('\n');
    assert.equal(lines.length, 200);
    assert.deepEqual(JSON.parse(lines[7]!), { key: 'k/7', value: { i: 7 } });
  });

  void it("'write' mode: the line is in the file when append resolves, and fdatasync follows in the background", async () => {
    const dir = freshDir();
    const wal = new WriteAheadLog(dir, { sync: 'write', syncIntervalMs: 5 });
    await wal.open();
    for (let i = 0; i < 3; i++) {
      await wal.append(`k/${i}`, JSON.stringify({ i }));
      // Read by another descriptor right away: what a restarted process would replay after kill -9.
      assert.equal(
        fs
          .readFileSync(path.join(dir, files(dir)[0]!), 'utf8')
          .trim()
          .split('\n').length,
        i + 1,
      );
    }
    assert.equal(wal.commits, 0, 'no fdatasync on the response path');
    for (let i = 0; i < 100 && wal.commits === 0; i++) await sleep(5);
    assert.ok(wal.commits >= 1, 'background fdatasync ran');
    const replay = await new WriteAheadLog(dir).open();
    assert.deepEqual(
      replay.map((e) => e.key),
      ['k/0', 'k/1', 'k/2'],
    );
    await wal.close();
  });

  void it('an append made alone is written before append returns; others wait for the end of the turn and share one write', async () => {
    const dir = freshDir();
    const wal = new WriteAheadLog(dir, { sync: 'write' });
    await wal.open();
    const lines = () =>
      files(dir).length
        ? fs
            .readFileSync(path.join(dir, files(dir)[0]!), 'utf8')
            .trim()
            .split('\n').length
        : 0;
    const alone = wal.append('k/alone', '{}', true);
    assert.equal(lines(), 1, 'written synchronously');
    const batched = [wal.append('k/a', '{}'), wal.append('k/b', '{}')];
    assert.equal(lines(), 1, 'queued until the end of the turn');
    await Promise.all([alone, ...batched]);
    assert.equal(lines(), 3);
    await wal.close();
  });

  void it('appends a document given as pieces (bytes as received) in one line, and reads it back from the file, not memory', async () => {
    const dir = freshDir();
    const wal = new WriteAheadLog(dir);
    await wal.open();
    const answer = Buffer.from('{"text":"caf\u00e9 \u2028","ids":[1,2,3]}');
    const [a, b, c] = await Promise.all([
      wal.append('k/a', ['{"n":1,"answer":', answer, '}']),
      wal.append('k/b', '{"n":2}'),
      wal.append('k/c', [Buffer.from('{"n":'), '3}']),
    ]);
    assert.equal(a!.json, undefined, 'pieces are not kept in memory');
    assert.equal(b!.json, '{"n":2}');
    const want = ['{"n":1,"answer":{"text":"caf\u00e9 \u2028","ids":[1,2,3]}}', '{"n":2}', '{"n":3}'];
    assert.deepEqual(readEntries([a!, b!, c!].map(entryRef)), want);
    assert.deepEqual(
      [a!, b!, c!].map((e) => e.bytes),
      want.map((w) => Buffer.byteLength(w)),
    );
    await wal.close();
    const replay = await new WriteAheadLog(dir).open();
    assert.deepEqual(
      replay.map((e) => [e.key, JSON.parse(e.json!)]),
      [
        ['k/a', JSON.parse(want[0]!)],
        ['k/b', { n: 2 }],
        ['k/c', { n: 3 }],
      ],
    );
  });

  void it("replays another process's segment, skipping a torn last line, and deletes it once uploaded", async () => {
    const dir = freshDir();
    const torn = '{"key":"a","value":{"n":1}}\n{"key":"b","value":{"n":2}}\n{"key":"c","val';
    fs.writeFileSync(path.join(dir, '1-1-000000.jsonl'), torn);
    const wal = new WriteAheadLog(dir);
    const replay = await wal.open();
    assert.deepEqual(
      replay.map((e) => [e.key, e.json]),
      [
        ['a', '{"n":1}'],
        ['b', '{"n":2}'],
      ],
    );
    await wal.markUploaded(replay[0]!);
    assert.equal(files(dir).length, 1, 'kept while an entry is still unuploaded');
    await wal.markUploaded(replay[1]!);
    assert.equal(files(dir).length, 0);
  });

  for (const sync of ['write', 'fsync'] as const) {
    void it(`'${sync}' mode rotates segments and deletes the sealed ones whose entries are all uploaded`, async () => {
      const dir = freshDir();
      const wal = new WriteAheadLog(dir, { sync, maxSegmentBytes: 1024, rotateIdleBytes: 512 });
      await wal.open();
      const entries = [];
      for (let i = 0; i < 40; i++)
        entries.push(await wal.append(`k/${i}`, JSON.stringify({ pad: 'x'.repeat(100), i })));
      assert.ok(files(dir).length > 1, 'rotated');
      for (const e of entries) await wal.markUploaded(e);
      assert.ok(files(dir).length <= 1, `left ${files(dir).length} segments`);
      await wal.close();
      assert.equal(files(dir).length, 0);
      assert.equal(wal.bytes, 0);
    });
  }
});

void describe('SSE splitter', () => {
  void it('yields the same data events however the byte stream is cut', async () => {
    const events = ['{"a":1}', '{"b":"two\\nlines"}', '[DONE]'];
    const text = `: comment\n\ndata: ${events[0]}\n\nevent: x\ndata: ${events[1]}\r\n\r\ndata: ${events[2]}\n\n`;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 12 }),
        async (cuts) => {
          const bounds = [0, ...cuts.sort((a, b) => a - b), text.length];
          const parts = bounds.slice(1).map((end, i) => Buffer.from(text.slice(bounds[i], end)));
          const got: string[] = [];
          for await (const d of sseData(
            (async function* () {
              yield* parts;
            })(),
          ))
            got.push(d);
          assert.deepEqual(got, events);
        },
      ),
      { numRuns: 200, seed: 7 },
    );
  });
});
