import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Rollout } from '../../src/gateway/registry/rollout-registry.js';
import { listClaims, SeqClaims } from '../../src/gateway/registry/seq-claims.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startStore } from './harness.js';

let services: TestServices;
let store: ObjectStore;
before(async () => ({ services, store } = await startStore()));
after(async () => services?.stop());

/** Each replica's own view of one attempt (its hint of the next seq), as the registry keeps it. */
const viewOf = (ref: ReturnType<typeof rolloutInput>) => ({ ref, nextSeq: 0 }) as unknown as Rollout;

void describe('seq claims in the object store (real S3)', () => {
  void it('alternating replicas number sequential calls 0, 1, 2, ... in call order', async () => {
    const ref = rolloutInput();
    const replicas = [new SeqClaims(store, 'gw-a'), new SeqClaims(store, 'gw-b'), new SeqClaims(store, 'gw-c')];
    const views = replicas.map(() => viewOf(ref));
    const seqs: number[] = [];
    for (let i = 0; i < 9; i++) seqs.push(await replicas[i % 3]!.next(views[i % 3]!));
    assert.deepEqual(seqs, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(
      (await listClaims(store, ref)).map((c) => c.seq),
      seqs,
      'only the winning claims remain',
    );
    assert.deepEqual(
      (await listClaims(store, ref, 5)).map((c) => c.seq),
      [5, 6, 7, 8],
      'a claim lists only the claims from its seq on',
    );
  });

  void it("concurrent claims from two replicas never share a seq, and each replica's sequential calls increase", async () => {
    const ref = rolloutInput();
    const got: number[][] = [[], []];
    await Promise.all(
      ['gw-a', 'gw-b'].map(async (id, r) => {
        const claims = new SeqClaims(store, id);
        // Four calls in flight at a time per replica, each replica with its own hint, all racing for the same seqs.
        await Promise.all(
          Array.from({ length: 4 }, async () => {
            const view = viewOf(ref);
            const mine: number[] = [];
            for (let i = 0; i < 5; i++) mine.push(await claims.next(view));
            assert.deepEqual(
              mine,
              [...mine].sort((a, b) => a - b),
              "one caller's sequential calls get increasing seqs",
            );
            got[r]!.push(...mine);
          }),
        );
      }),
    );
    const all = got.flat();
    assert.equal(all.length, 40);
    assert.equal(new Set(all).size, 40, `a seq was handed out twice: ${JSON.stringify(got)}`);
    const held = (await listClaims(store, ref)).map((c) => c.seq);
    assert.deepEqual(
      [...held].sort((a, b) => a - b),
      [...all].sort((a, b) => a - b),
      'every handed-out seq has exactly its claim',
    );
  });
});
