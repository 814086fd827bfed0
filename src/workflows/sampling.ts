/**
 * Deterministic task sampling from the run seed and iteration: the same run replays the same tasks.
 * A small PRNG (mulberry32) keyed by a hash of (seed, iteration) — Math.random is banned in workflows.
 */
/** Seeded PRNG (mulberry32); pure, so workflows and synthetic-data generators share it. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 32-bit hash of integers (FNV-style over the parts, then an avalanche): seeds one choice from (seed, iteration, ...). */
export function mixSeed(seed: number, ...parts: number[]): number {
  let h = 2166136261 ^ seed;
  for (const part of parts) h = Math.imul(h ^ part, 16777619);
  h = Math.imul(h ^ (h >>> 13), 0x5bd1e995);
  return (h ^ (h >>> 15)) >>> 0;
}

/** Pick `count` distinct ids (all of them, shuffled, when count >= ids.length). */
export function sampleTaskIds(ids: readonly string[], count: number, seed: number, iteration: number): string[] {
  const rand = seededRandom(mixSeed(seed, iteration));
  const pool = [...ids];
  const n = Math.min(count, pool.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(rand() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j] as string, pool[i] as string];
  }
  return pool.slice(0, n);
}
