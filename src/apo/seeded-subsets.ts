import { seededRandom } from '../workflows/sampling.js';

/** A 32-bit hash of integers (FNV-1a over their words, then an avalanche): seeds one choice from (seed, round, child, ...). */
export function mixSeed(...parts: number[]): number {
  let h = 2166136261;
  for (const part of parts) {
    h = Math.imul(h ^ (part >>> 0), 16777619);
    h = Math.imul(h ^ Math.floor(part / 4294967296), 16777619);
  }
  h = Math.imul(h ^ (h >>> 13), 0x5bd1e995);
  return (h ^ (h >>> 15)) >>> 0;
}

/** `size` distinct indices of 0..n-1 (all of them when size >= n), in ascending order, drawn from the seed. */
export function seededSubset(n: number, size: number, seed: number): number[] {
  const rand = seededRandom(seed);
  const pool = Array.from({ length: n }, (_, i) => i);
  const k = Math.min(size, n);
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(rand() * (n - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, k).sort((a, b) => a - b);
}

/** How many re-draws a child gets to find a subset its siblings do not already have. */
const MAX_DRAWS = 32;

/**
 * A subset for one child that differs from every subset in `taken` (compared as sets), drawn from
 * (seed, round, childIndex, draw); null when no new subset turned up, e.g. the pool is no bigger than `size`.
 */
export function distinctSubset(n: number, size: number, key: { seed: number; round: number; childIndex: number }, taken: ReadonlySet<string>): number[] | null {
  for (let draw = 0; draw < MAX_DRAWS; draw++) {
    const subset = seededSubset(n, size, mixSeed(key.seed, key.round, key.childIndex, draw));
    if (!taken.has(subset.join(','))) return subset;
  }
  return null;
}
