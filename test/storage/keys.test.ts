import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { assertId, assertKey, keys, UnsafeIdError, UnsafeKeyError } from '../../src/storage/keys.js';

const ref = { runId: 'run-1', iteration: 3, rolloutId: 'r7', attempt: 1 };
const sha = 'ab'.repeat(32);

void describe('storage keys', () => {
  void it('rejects unsafe ids wherever a key is built from one', () => {
    for (const bad of ['../x', 'a/b', '', 'x'.repeat(200), '..', '.hidden', 'a..b', 'a b', 'ü', 7, null, undefined]) {
      assert.throws(() => assertId('run', bad), UnsafeIdError, `assertId accepted ${JSON.stringify(bad)}`);
      assert.throws(() => keys.run(bad as string), UnsafeIdError);
      assert.throws(() => keys.rolloutResult({ ...ref, rolloutId: bad as string }), UnsafeIdError);
    }
    assert.throws(() => keys.evaluation('run-1', 0, 'a/b'), /unsafe evaluation id "a\/b"/);
  });

  void it('accepts ordinary ids up to 128 characters', () => {
    for (const ok of ['run-1', 'A.b_c-9', '0', 'x'.repeat(128)]) assert.equal(assertId('run', ok), ok);
    assert.throws(() => assertId('run', 'x'.repeat(129)), UnsafeIdError);
  });

  void it('rejects negative, fractional and non-numeric indexes', () => {
    for (const bad of [-1, 1.5, Number.NaN, Infinity, '3']) {
      assert.throws(() => keys.iteration('run-1', bad as number), /non-negative integer/);
      assert.throws(() => keys.span(ref, bad as number), UnsafeIdError);
    }
  });

  void it('lays keys out by run and iteration, zero-padded so listings sort numerically', () => {
    assert.equal(keys.span(ref, 12), 'runs/run-1/iterations/000003/rollouts/r7/attempt-001/spans/00000012.json');
    assert.ok(keys.span(ref, 2) < keys.span(ref, 10));
    assert.equal(keys.batch('run-1', 0), 'runs/run-1/iterations/000000/batch/samples.safetensors');
  });

  void it('keeps every key built from arbitrary strings inside its run prefix (property)', () => {
    const idLike = fc.oneof(
      fc.string({ maxLength: 140 }),
      fc.stringMatching(/^[A-Za-z0-9_./-]{1,20}$/),
      fc.constantFrom('..', '.', 'a/../b', '%2e%2e'),
    );
    fc.assert(
      fc.property(idLike, idLike, (runId, rolloutId) => {
        let key: string;
        try {
          key = keys.rolloutResult({ runId, iteration: 1, rolloutId, attempt: 0 });
        } catch (err) {
          assert.ok(err instanceof UnsafeIdError);
          return;
        }
        assert.equal(assertKey(key), key);
        assert.ok(key.startsWith(`runs/${runId}/iterations/000001/rollouts/${rolloutId}/`));
        assert.equal(key.split('/').length, 8, 'an id never adds a path segment');
      }),
      { numRuns: 2000 },
    );
  });

  void it('nests attempts, their outcome and markers under the rollout', () => {
    const attempts = keys.rolloutAttempts('run-1', 3, 'r7');
    for (const k of [
      keys.rolloutOutcome('run-1', 3, 'r7'),
      keys.rolloutStarted(ref),
      keys.rolloutLog(ref, 'stderr'),
      keys.agentRewards(ref),
    ]) {
      assert.ok(k.startsWith(attempts), k);
    }
  });

  void it('content-addresses checkpoints and task sets by a lowercase sha256 only', () => {
    assert.equal(keys.checkpoint(sha), `checkpoints/${sha}/`);
    assert.equal(keys.checkpointManifest(sha), `checkpoint-manifests/${sha}.json`);
    assert.equal(keys.taskSet(sha), `task-sets/${sha}.jsonl`);
    for (const bad of [sha.toUpperCase(), sha.slice(1), `${sha}/..`, '../x']) {
      assert.throws(() => keys.checkpoint(bad), /64 lowercase hex/);
      assert.throws(() => keys.taskSet(bad), UnsafeIdError);
    }
  });

  void it('assertKey refuses absolute, empty-segment, dot-segment and control-character keys', () => {
    for (const bad of ['', '/a', 'a//b', 'a/../b', './a', 'a/.', 'a\\b', 'a\nb', 'a/', 'x'.repeat(1025)]) {
      assert.throws(() => assertKey(bad), UnsafeKeyError, `assertKey accepted ${JSON.stringify(bad)}`);
    }
    assert.equal(assertKey('runs/a/', { prefix: true }), 'runs/a/');
    assert.throws(() => assertKey('runs//', { prefix: true }), UnsafeKeyError);
    assert.equal(assertKey('runs/a/b.json'), 'runs/a/b.json');
  });
});
