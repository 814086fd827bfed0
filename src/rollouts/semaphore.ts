/** Counting semaphore bounding how many rollouts one runner instance runs at once; waiters are FIFO. */
export class Semaphore {
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`concurrency must be an integer >= 1, got ${limit}`);
  }

  get inUse(): number {
    return this.active;
  }

  /** Resolves with a release function once a slot is free; rejects if the signal aborts while waiting. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.active--;
    };
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      // A freed slot passes straight to the next waiter, so `active` does not change on hand-over.
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(release);
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal?.reason);
      };
      this.waiters.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
