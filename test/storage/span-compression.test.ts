import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { compressSegment, compressSegmentAsync, spanObjectText } from '../../src/storage/span-compression.js';
import { recordedRollout } from '../gateway/engine-spans.js';

const ref = { runId: 'cmp', iteration: 0, rolloutId: 'r', attempt: 0 };
const segment = Buffer.from(
  recordedRollout(ref, { turns: 4, seed: 7, promptLen: 500, completionLen: 64 })
    .map((c) => `${c.record}\n`)
    .join(''),
);

void describe('segment compression', () => {
  void it('reads back brotli, gzip and plain segments alike, sync and on the thread pool', async () => {
    for (const how of ['brotli', 'gzip', 'none'] as const) {
      assert.equal(spanObjectText(compressSegment(segment, how)), segment.toString(), how);
      assert.equal(spanObjectText(await compressSegmentAsync(segment, how)), segment.toString(), `${how} async`);
    }
    assert.ok(
      compressSegment(segment, 'brotli').length < compressSegment(segment, 'gzip').length,
      'brotli is smaller than gzip level 1 here',
    );
  });

  // The reader tells the formats apart by their first bytes: a brotli stream must never look like JSON or gzip.
  void it('starts every brotli stream with a byte that is neither "{" nor gzip magic, whatever the size or content', () => {
    const texts = [
      Buffer.from('{}\n'),
      Buffer.from('{"a":1}\n'.repeat(3)),
      segment,
      segment.subarray(0, 1000),
      randomBytes(50_000),
      Buffer.alloc(5_000_000, 0x7b),
      Buffer.concat(Array.from({ length: 40 }, () => segment)),
    ];
    for (const text of texts) {
      const body = compressSegment(text, 'brotli');
      assert.equal(body[0]! & 0x0f, 0x0b, `first byte 0x${body[0]!.toString(16)} for ${text.length} bytes`);
      assert.notEqual(body[0], 0x7b);
      assert.notEqual(body[0], 0x1f);
      assert.ok(spanObjectText(body) === text.toString('utf8'));
    }
  });

  void it('leaves JSON text and gzip to their own readers, and fails on a truncated brotli stream', () => {
    assert.equal(spanObjectText(Buffer.from('{"x":1}')), '{"x":1}');
    assert.equal(spanObjectText(gzipSync('{"x":2}\n')), '{"x":2}\n');
    assert.throws(() => spanObjectText(compressSegment(segment, 'brotli').subarray(0, 30)));
  });
});
