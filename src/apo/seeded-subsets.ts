import { mixSeed, seededRandom } from '../workflows/sampling.js';

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

/** Draws per window size, and in all: a window widens by one item every few draws that found only taken subsets. */
const DRAWS_PER_WINDOW = 4;
const MAX_DRAWS = 64;

export interface SubsetKey {
  seed: number;
  round: number;
  childIndex: number;
}

/** 0..n-1 with items `better` ranks first in front, ties in an order drawn from the seed. */
export function seededRanking(n: number, better: (a: number, b: number) => number, seed: number): number[] {
  const rand = seededRandom(seed);
  const tie = Array.from({ length: n }, () => rand());
  return Array.from({ length: n }, (_, i) => i).sort((a, b) => better(a, b) || tie[a]! - tie[b]! || a - b);
}

/**
 * A subset for one child, as close to the top of the ranking as its siblings allow: the first draws take the best
 * `size` items (ties drawn from (seed, round, childIndex, draw)); when those are in `taken` (compared as sets),
 * later draws pick `size` of a window one item wider every few draws. Ascending indices; null when no new subset
 * turned up, e.g. the pool is no bigger than `size`.
 */
export function preferredSubset(
  n: number,
  size: number,
  better: (a: number, b: number) => number,
  key: SubsetKey,
  taken: ReadonlySet<string>,
): number[] | null {
  const k = Math.min(size, n);
  for (let draw = 0; draw < MAX_DRAWS; draw++) {
    const seed = mixSeed(key.seed, key.round, key.childIndex, draw);
    const ranking = seededRanking(n, better, seed);
    const window = Math.min(n, k + Math.floor(draw / DRAWS_PER_WINDOW));
    const subset = seededSubset(window, k, mixSeed(seed, window))
      .map((i) => ranking[i]!)
      .sort((a, b) => a - b);
    if (!taken.has(subset.join(','))) return subset;
  }
  return null;
}
