import type { Rollout } from './rollout-registry.js';

/** Counts calls in flight, per rollout and overall, so close and drain can wait for them. */
export class InFlight {
  private total = 0;
  private idleWaiters: (() => void)[] = [];
  private lastEnd = performance.now();

  get count(): number {
    return this.total;
  }

  /** Milliseconds since the last call finished; 0 while any is in flight. */
  idleForMs(): number {
    return this.total > 0 ? 0 : performance.now() - this.lastEnd;
  }

  begin(rollout: Rollout): void {
    rollout.inFlight++;
    this.total++;
  }

  end(rollout: Rollout): void {
    rollout.inFlight--;
    this.total--;
    this.lastEnd = performance.now();
    if (rollout.inFlight === 0) wakeAll(rollout.idle);
    if (this.total === 0) wakeAll(this.idleWaiters);
  }

  async rolloutIdle(rollout: Rollout): Promise<void> {
    if (rollout.inFlight === 0) return;
    await new Promise<void>((resolve) => rollout.idle.push(resolve));
  }

  async allIdle(): Promise<void> {
    if (this.total === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }
}

function wakeAll(waiters: (() => void)[]): void {
  for (const wake of waiters.splice(0)) wake();
}
