/**
 * spans → batch throughput on synthetic multi-turn rollouts generated on the fly (never all in RAM).
 *   node --import tsx bench/batches.ts [--spans 100000] [--turns 8] [--reps 3] [--only none|jsonl|safetensors]
 * Per rep: build samples + manifest; the same plus JSONL encoding (the old format: JSON.stringify only, nothing
 * written); the same plus the safetensors batch file written to a temp dir (what writeBatch uploads). The time
 * spent generating spans inside each pass is measured and subtracted. CPU seconds, medians over reps, side by side.
 * Peak RSS is per process: --only runs one kind of pass, so its memory can be compared at several --spans.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildBatchFile } from '../src/batches/batch-io.js';
import { buildBatch } from '../src/batches/build-batch.js';
import { batchConfigSchema } from '../src/batches/config.js';
import type { ScoredRollout } from '../src/batches/groups.js';
import { syntheticRollout } from '../test/helpers/synthetic-spans.js';
import type { RolloutRef } from '../src/contracts/rollout.js';

const { values } = parseArgs({
  options: {
    spans: { type: 'string', default: '100000' },
    turns: { type: 'string', default: '8' },
    reps: { type: 'string', default: '3' },
    only: { type: 'string' },
  },
});
const turns = Number(values.turns);
const rollouts = Math.ceil(Number(values.spans) / turns);
const reps = Number(values.reps);
const GROUP = 8;

const scored: ScoredRollout[] = Array.from({ length: rollouts }, (_, i) => ({
  reward: ((i * 7919) % 5) / 4,
  result: {
    ref: { runId: 'bench', iteration: 0, rolloutId: `r${i}`, attempt: 0 },
    taskId: `t${Math.floor(i / GROUP)}`,
    groupId: `g${Math.floor(i / GROUP)}`,
    mode: 'train',
    outcome: 'succeeded',
    exitCode: 0,
    signal: null,
    durationMs: 0,
    outputText: null,
    stdoutKey: 'x',
    stderrKey: 'x',
    detail: null,
  },
}));
// Realistic agent shapes: 256-token system+task prompt, 64-token turns, 32 tokens of tool output between them;
// every 4th rollout trims its history once (a break), every 50th has a failed call.
// CPU time, not wall time: the benchmark machine is shared, and the goal is per core.
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
let generationS = 0;
const spansOf = (ref: RolloutRef) => {
  const t0 = cpuSeconds();
  const i = Number(ref.rolloutId.slice(1));
  const spans = syntheticRollout(ref, {
    turns,
    seed: i,
    promptLen: 256,
    completionLen: 64,
    gapLen: 32,
    rewriteAt: i % 4 === 0 ? [5] : [],
    errorAt: i % 50 === 0 ? [3] : [],
  });
  generationS += cpuSeconds() - t0;
  return spans;
};
const config = batchConfigSchema.parse({ estimator: 'grpo', maxTokens: 8192 });

type Encoding = 'none' | 'jsonl' | 'safetensors';
const kinds: Encoding[] = values.only === undefined ? ['none', 'jsonl', 'safetensors'] : [values.only as Encoding];
if (!kinds.every((k) => ['none', 'jsonl', 'safetensors'].includes(k)))
  throw new Error(`--only: ${values.only} is not none, jsonl or safetensors`);
const tmp = await mkdtemp(path.join(os.tmpdir(), 'volt-bench-batches-'));

/** One full build; the time spent generating spans inside it is measured and subtracted. */
async function pass(encoding: Encoding) {
  generationS = 0;
  const t0 = cpuSeconds();
  const w0 = process.hrtime.bigint();
  let bytes = 0;
  let m;
  if (encoding === 'safetensors') {
    const built = await buildBatchFile(path.join(tmp, 'samples.safetensors'), scored, config, spansOf, { tmpDir: tmp });
    m = built.manifest;
    bytes = built.bytes;
  } else {
    const build = buildBatch(scored, spansOf, config);
    for await (const row of build.samples)
      if (encoding === 'jsonl') bytes += Buffer.byteLength(JSON.stringify(row)) + 1;
    m = build.manifest();
  }
  const total = cpuSeconds() - t0;
  const wall = Number(process.hrtime.bigint() - w0) / 1e9;
  return {
    seconds: total - generationS,
    generation: generationS,
    wall,
    transitions: m.counts.transitions,
    tokens: m.tokens.prompt + m.tokens.response,
    bytes,
    manifestBytes: JSON.stringify(m).length,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const runs = {
  generation: [] as number[],
  none: [] as number[],
  jsonl: [] as number[],
  safetensors: [] as number[],
  wall: [] as number[],
};
let last = await pass(kinds[0]!);
let jsonlBytes = 0;
try {
  for (let r = 0; r < reps; r++) {
    for (const kind of kinds) {
      const p = await pass(kind);
      runs.generation.push(p.generation);
      runs[kind].push(p.seconds);
      runs.wall.push(p.wall);
      if (kind === 'jsonl') jsonlBytes = p.bytes;
      last = p;
    }
  }
} finally {
  await rm(tmp, { recursive: true, force: true });
}
const n = last.transitions;
const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const fmt = (x: number) => Math.round(x).toLocaleString('en-US').padStart(14);
console.log(
  `${rollouts.toLocaleString()} rollouts × ${turns} turns = ${(rollouts * turns).toLocaleString()} spans; ${n.toLocaleString()} transitions; ${last.tokens.toLocaleString()} sample tokens; median of ${reps}`,
);
if (jsonlBytes > 0 && last.bytes > 0)
  console.log(
    `batch file: JSONL ${mib(jsonlBytes)}, safetensors ${mib(last.bytes)} (${(last.bytes / jsonlBytes).toFixed(2)}x); manifest ${mib(last.manifestBytes)}`,
  );
console.log(
  `${'pass'.padEnd(36)}${'CPU s'.padStart(10)}${'transitions/s'.padStart(14)}${'tokens/s'.padStart(14)}  vs goal 100k/s`,
);
const row = (name: string, xs: number[]) => {
  if (xs.length === 0) return;
  const s = median(xs);
  console.log(
    `${name.padEnd(36)}${s.toFixed(3).padStart(10)}${fmt(n / s)}${fmt(last.tokens / s)}  ${(n / s / 100_000).toFixed(2)}x`,
  );
};
row('generate synthetic spans (input)', runs.generation);
row('build samples + manifest', runs.none);
row('build + JSONL encode (old, no write)', runs.jsonl);
row('build + safetensors file (written)', runs.safetensors);
if (runs.jsonl.length > 0 && runs.safetensors.length > 0) {
  const [b, j, st] = [median(runs.none), median(runs.jsonl), median(runs.safetensors)];
  console.log(
    `safetensors vs JSONL, build + encode: ${(j / st).toFixed(2)}x faster; encoding alone: JSONL ${(j - b).toFixed(3)} s, safetensors ${(st - b).toFixed(3)} s`,
  );
}
console.log(
  `wall time of one pass, median (generate + build + encode): ${median(runs.wall).toFixed(2)} s (machine load ${os.loadavg()[0]!.toFixed(1)})`,
);
console.log(
  `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB${values.only ? ` (--only ${values.only})` : ''}`,
);
