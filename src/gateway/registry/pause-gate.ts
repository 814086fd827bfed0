/** Pause holds new calls for up to a bound; callers still waiting when it expires are answered 429. */
export class PauseGate {
  private waiters = new Set<() => void>();
  paused = false;

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves true once open, false if still paused after maxWaitMs. */
  async waitOpen(maxWaitMs: number): Promise<boolean> {
    if (!this.paused) return true;
    return new Promise<boolean>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        resolve(false);
      }, maxWaitMs);
      this.waiters.add(wake);
    });
  }
}
