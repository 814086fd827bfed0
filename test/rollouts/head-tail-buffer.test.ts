import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { HeadTailBuffer } from '../../src/rollouts/head-tail-buffer.js';

void describe('HeadTailBuffer', () => {
  void it('keeps exactly the first head and last tail bytes of any chunking, with a marker when it dropped some', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }),
        fc.nat(200),
        fc.nat(200),
        (chunks, headBytes, tailBytes) => {
          const buf = new HeadTailBuffer(headBytes, tailBytes);
          for (const c of chunks) buf.write(c);
          const all = Buffer.concat(chunks);
          const kept = headBytes + tailBytes;
          assert.equal(buf.totalBytes, all.length);
          if (all.length <= kept) {
            assert.deepEqual(buf.toBuffer(), all);
          } else {
            const marker = Buffer.from(`\n[volt: ${all.length - kept} bytes truncated of ${all.length}]\n`);
            const expected = Buffer.concat([all.subarray(0, headBytes), marker, all.subarray(all.length - tailBytes)]);
            assert.deepEqual(buf.toBuffer(), expected);
            assert.equal(buf.truncated, true);
          }
        },
      ),
    );
  });

  void it('rejects negative sizes', () => {
    assert.throws(() => new HeadTailBuffer(-1, 10), RangeError);
  });
});
