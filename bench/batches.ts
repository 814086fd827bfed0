/**
 * spans → batch throughput on synthetic multi-turn rollouts generated on the fly (never all in RAM).
 *   node --import tsx bench/batches.ts [--spans 100000] [--turns 8] [--reps 3]
 * Per rep: build samples + manifest, then the same plus JSONL encoding (what putJsonl sends); the time spent
 * generating spans inside each pass is measured and subtracted. CPU seconds, medians over reps, side by side.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { buildBatch } from '../src/batches/build-batch.js';
import { batchConfigSchema } from '../src/batches/config.js';
import type { ScoredRollout } from '../src/batches/groups.js';
import { syntheticRollout } from '../src/batches/synthetic-spans.js';
import type { RolloutRef } from '../src/storage/keys.js';

const { values } = parseArgs({ options: { spans: { type: 'string', default: '100000' }, turns: { type: 'string', default: '8' }, reps: { type: 'string', default: '3' } } });
const turns = Number(values.turns);
const rollouts = Math.ceil(Number(values.spans) / turns);
const reps = Number(values.reps);
const GROUP = 8;

const scored: ScoredRollout[] = Array.from({ length: rollouts }, (_, i) => ({
  reward: (i * 7919) % 5 / 4,
  result: {
    ref: { runId: 'bench', iteration: 0, rolloutId: `r${i}`, attempt: 0 }, taskId: `t${Math.floor(i / GROUP)}`, groupId: `g${Math.floor(i / GROUP)}`,
    mode: 'train', outcome: 'succeeded', exitCode: 0, signal: null, durationMs: 0, outputText: null, stdoutKey: 'x', stderrKey: 'x', detail: null,
  },
}));
// Realistic agent shapes: 256-token system+task prompt, 64-token turns, 32 tokens of tool output between them;
// every 4th rollout trims its history once (a break), every 50th has a failed call.
// CPU time, not wall time: the benchmark machine is shared, and the goal is per core.
const cpuSeconds = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
let generationS = 0;
const spansOf = (ref: RolloutRef) => {
  const t0 = cpuSeconds();
  const i = Number(ref.rolloutId.slice(1));
  const spans = syntheticRollout(ref, { turns, seed: i, promptLen: 256, completionLen: 64, gapLen: 32, rewriteAt: i % 4 === 0 ? [5] : [], errorAt: i % 50 === 0 ? [3] : [] });
  generationS += cpuSeconds() - t0;
  return spans;
};
const config = batchConfigSchema.parse({ estimator: 'grpo', maxTokens: 8192 });

/** One full build; the time spent generating spans inside it is measured and subtracted. */
async function pass(encode: boolean) {
  generationS = 0;
  const t0 = cpuSeconds();
  const w0 = process.hrtime.bigint();
  let bytes = 0;
  const build = buildBatch(scored, spansOf, config);
  for await (const row of build.samples) if (encode) bytes += Buffer.byteLength(JSON.stringify(row)) + 1;
  const m = build.manifest();
  const total = cpuSeconds() - t0;
  const wall = Number(process.hrtime.bigint() - w0) / 1e9;
  return { seconds: total - generationS, generation: generationS, wall, transitions: m.counts.transitions, tokens: m.tokens.prompt + m.tokens.response, bytes, manifestBytes: JSON.stringify(m).length };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const runs = { generation: [] as number[], build: [] as number[], jsonl: [] as number[], wall: [] as number[] };
let last = await pass(false);
for (let r = 0; r < reps; r++) {
  const b = await pass(false);
  const j = await pass(true);
  runs.generation.push(b.generation);
  runs.build.push(b.seconds);
  runs.jsonl.push(j.seconds);
  runs.wall.push(j.wall);
  last = j;
}
const n = last.transitions;
const fmt = (x: number) => Math.round(x).toLocaleString('en-US').padStart(14);
console.log(`${rollouts.toLocaleString()} rollouts × ${turns} turns = ${(rollouts * turns).toLocaleString()} spans; ${n.toLocaleString()} transitions; ${last.tokens.toLocaleString()} sample tokens; JSONL ${(last.bytes / 2 ** 20).toFixed(1)} MiB, manifest ${(last.manifestBytes / 2 ** 20).toFixed(1)} MiB; median of ${reps}`);
console.log(`${'pass'.padEnd(34)}${'CPU s'.padStart(10)}${'transitions/s'.padStart(14)}${'tokens/s'.padStart(14)}  vs goal 100k/s`);
const row = (name: string, s: number) => console.log(`${name.padEnd(34)}${s.toFixed(3).padStart(10)}${fmt(n / s)}${fmt(last.tokens / s)}  ${(n / s / 100_000).toFixed(2)}x`);
row('generate synthetic spans (input)', median(runs.generation));
row('build samples + manifest', median(runs.build));
row('build + JSONL encode', median(runs.jsonl));
console.log(`wall time of one full pass (generate + build + encode): ${median(runs.wall).toFixed(2)} s (machine load ${os.loadavg()[0]!.toFixed(1)})`);
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
