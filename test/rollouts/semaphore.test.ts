import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Semaphore } from '../../src/rollouts/semaphore.js';
import { TokenBucket } from '../../src/rollouts/token-bucket.js';

void describe('Semaphore', () => {
  void it('admits `limit` holders, hands slots over in FIFO order, and ignores double release', async () => {
    const sem = new Semaphore(2);
    const a = await sem.acquire();
    const b = await sem.acquire();
    const order: string[] = [];
    const c = sem.acquire().then((r) => (order.push('c'), r));
    const d = sem.acquire().then((r) => (order.push('d'), r));
    assert.equal(sem.inUse, 2);
    a();
    a();
    (await c)();
    b();
    (await d)();
    assert.deepEqual(order, ['c', 'd']);
    assert.equal(sem.inUse, 0);
  });

  void it('a waiter whose signal aborts leaves the queue without taking a slot', async () => {
    const sem = new Semaphore(1);
    const held = await sem.acquire();
    const controller = new AbortController();
    const waiting = sem.acquire(controller.signal);
    controller.abort(new Error('gone'));
    await assert.rejects(waiting, /gone/);
    held();
    assert.equal(sem.inUse, 0);
    assert.throws(() => new Semaphore(0), RangeError);
  });
});

void describe('TokenBucket', () => {
  void it('serves the burst at once, then no faster than the rate', async () => {
    const bucket = new TokenBucket(50, 3);
    const t0 = performance.now();
    for (let i = 0; i < 3; i++) await bucket.take();
    const burstMs = performance.now() - t0;
    for (let i = 0; i < 5; i++) await bucket.take();
    // Five more at 50/s need at least 100 ms of refill (lower bound only: a slow machine cannot break it).
    assert.ok(performance.now() - t0 >= 95, `8 takes in ${performance.now() - t0} ms`);
    assert.ok(burstMs < 95, `burst took ${burstMs} ms`);
  });

  void it('an aborted take rejects and does not block the next one', async () => {
    const bucket = new TokenBucket(20, 1);
    await bucket.take();
    await assert.rejects(bucket.take(AbortSignal.timeout(5)), { name: 'TimeoutError' });
    await bucket.take();
    assert.throws(() => new TokenBucket(0, 1), RangeError);
  });
});
