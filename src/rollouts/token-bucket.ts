import { setTimeout as sleep } from 'node:timers/promises';

/** Rate limit: `burst` takes at once, then `perSecond` on average; takers are served in order. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    readonly perSecond: number,
    readonly burst: number,
  ) {
    if (!(perSecond > 0) || !Number.isInteger(burst) || burst < 1) {
      throw new RangeError(`token bucket needs perSecond > 0 and an integer burst >= 1, got ${perSecond}, ${burst}`);
    }
    this.tokens = burst;
    this.last = performance.now();
  }

  /** Resolves when a token is taken; rejects if the signal aborts first (the token is not consumed). */
  take(signal?: AbortSignal): Promise<void> {
    const turn = this.queue.then(() => this.takeOne(signal));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async takeOne(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = performance.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      // Rejects with the signal's own reason (e.g. a TimeoutError), not a generic AbortError.
      await sleep(Math.ceil(((1 - this.tokens) / this.perSecond) * 1000), undefined, { signal }).catch((e: unknown) => {
        signal?.throwIfAborted();
        throw e;
      });
    }
  }
}
