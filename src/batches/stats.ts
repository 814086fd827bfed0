/** Running count/mean/std/min/max without keeping the values. */
export class RunningStats {
  private n = 0;
  private sum = 0;
  private sumSq = 0;
  private lo = Infinity;
  private hi = -Infinity;

  add(x: number): void {
    this.n += 1;
    this.sum += x;
    this.sumSq += x * x;
    if (x < this.lo) this.lo = x;
    if (x > this.hi) this.hi = x;
  }

  summary(): { count: number; mean: number | null; std: number | null; min: number | null; max: number | null } {
    if (this.n === 0) return { count: 0, mean: null, std: null, min: null, max: null };
    const mean = this.sum / this.n;
    return {
      count: this.n,
      mean,
      std: Math.sqrt(Math.max(0, this.sumSq / this.n - mean * mean)),
      min: this.lo,
      max: this.hi,
    };
  }
}
