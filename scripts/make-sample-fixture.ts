import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildBatch } from '../src/batches/build-batch.js';
import { batchConfigSchema } from '../src/batches/config.js';
import type { ScoredRollout } from '../src/batches/groups.js';
import { syntheticRollout, type SyntheticRolloutOptions } from '../src/batches/synthetic-spans.js';
import type { RolloutOutcome } from '../src/contracts/rollout.js';

/** The shared TS/Python contract fixture: synthetic spans through the real batch builder. */
export const FIXTURE_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../schemas/fixtures/samples.jsonl');

const RUN = 'run-fixture';

// Two groups of three: multi-turn merges, one rewritten history (two samples from one rollout),
// one over-long sample (truncated), one infra-failed rollout (excluded).
const ROLLOUTS: { id: string; group: string; reward: number | null; outcome?: RolloutOutcome; spans: Omit<SyntheticRolloutOptions, 'seed'> }[] = [
  { id: 'r-0-0', group: 'g-0', reward: 1, spans: { turns: 2, promptLen: 24, completionLen: 8, gapLen: 4 } },
  { id: 'r-0-1', group: 'g-0', reward: 0, spans: { turns: 1, promptLen: 24, completionLen: 10 } },
  { id: 'r-0-2', group: 'g-0', reward: 0.5, spans: { turns: 3, promptLen: 24, completionLen: 6, gapLen: 3, rewriteAt: [2] } },
  { id: 'r-0-3', group: 'g-0', reward: null, outcome: 'infra_failed', spans: { turns: 1 } },
  { id: 'r-1-0', group: 'g-1', reward: 0, spans: { turns: 2, promptLen: 20, completionLen: 8, gapLen: 5 } },
  { id: 'r-1-1', group: 'g-1', reward: 1, spans: { turns: 1, promptLen: 20, completionLen: 12 } },
  { id: 'r-1-2', group: 'g-1', reward: 1, spans: { turns: 4, promptLen: 20, completionLen: 10, gapLen: 6 } },
];

export async function makeSampleFixture(): Promise<string> {
  const scored: ScoredRollout[] = ROLLOUTS.map((r) => ({
    reward: r.reward,
    result: {
      ref: { runId: RUN, iteration: 0, rolloutId: r.id, attempt: 0 }, taskId: `task-${r.group}`, groupId: r.group, mode: 'train',
      outcome: r.outcome ?? 'succeeded', exitCode: 0, signal: null, durationMs: 1, outputText: null, stdoutKey: 'x', stderrKey: 'x', detail: null,
    },
  }));
  const options = new Map(ROLLOUTS.map((r, i) => [r.id, { ...r.spans, seed: 1000 + i }]));
  const build = buildBatch(scored, (ref) => syntheticRollout(ref, options.get(ref.rolloutId)!), batchConfigSchema.parse({ estimator: 'grpo', maxTokens: 72 }));
  const lines: string[] = [];
  for await (const row of build.samples) lines.push(JSON.stringify(row));
  return lines.join('\n') + '\n';
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const text = await makeSampleFixture();
  await writeFile(FIXTURE_PATH, text);
  console.log(`wrote ${FIXTURE_PATH}: ${text.trim().split('\n').length} samples, ${Buffer.byteLength(text)} bytes`);
}
