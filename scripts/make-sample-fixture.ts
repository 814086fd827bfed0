import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildBatchFile } from '../src/batches/batch-io.js';
import { batchConfigSchema } from '../src/batches/config.js';
import type { ScoredRollout } from '../src/batches/groups.js';
import { syntheticRollout, type SyntheticRolloutOptions } from '../test/helpers/synthetic-spans.js';
import type { RolloutOutcome } from '../src/contracts/rollout.js';

/** The shared TS/Python contract fixture: synthetic spans through the real batch builder. */
export const FIXTURE_PATH = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../schemas/fixtures/samples.safetensors',
);

const RUN = 'run-fixture';

// Two groups of three: multi-turn merges, one rewritten history (two samples from one rollout),
// one over-long sample (truncated), one infra-failed rollout (excluded).
const ROLLOUTS: {
  id: string;
  group: string;
  reward: number | null;
  outcome?: RolloutOutcome;
  spans: Omit<SyntheticRolloutOptions, 'seed'>;
}[] = [
  { id: 'r-0-0', group: 'g-0', reward: 1, spans: { turns: 2, promptLen: 24, completionLen: 8, gapLen: 4 } },
  { id: 'r-0-1', group: 'g-0', reward: 0, spans: { turns: 1, promptLen: 24, completionLen: 10 } },
  {
    id: 'r-0-2',
    group: 'g-0',
    reward: 0.5,
    spans: { turns: 3, promptLen: 24, completionLen: 6, gapLen: 3, rewriteAt: [2] },
  },
  { id: 'r-0-3', group: 'g-0', reward: null, outcome: 'infra_failed', spans: { turns: 1 } },
  { id: 'r-1-0', group: 'g-1', reward: 0, spans: { turns: 2, promptLen: 20, completionLen: 8, gapLen: 5 } },
  { id: 'r-1-1', group: 'g-1', reward: 1, spans: { turns: 1, promptLen: 20, completionLen: 12 } },
  { id: 'r-1-2', group: 'g-1', reward: 1, spans: { turns: 4, promptLen: 20, completionLen: 10, gapLen: 6 } },
];

export async function makeSampleFixture(): Promise<Buffer> {
  const scored: ScoredRollout[] = ROLLOUTS.map((r) => ({
    reward: r.reward,
    result: {
      ref: { runId: RUN, iteration: 0, rolloutId: r.id, attempt: 0 },
      taskId: `task-${r.group}`,
      groupId: r.group,
      mode: 'train',
      outcome: r.outcome ?? 'succeeded',
      exitCode: 0,
      signal: null,
      durationMs: 1,
      outputText: null,
      stdoutKey: 'x',
      stderrKey: 'x',
      detail: null,
    },
  }));
  const options = new Map(ROLLOUTS.map((r, i) => [r.id, { ...r.spans, seed: 1000 + i }]));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'volt-fixture-'));
  try {
    const file = path.join(dir, 'samples.safetensors');
    await buildBatchFile(
      file,
      scored,
      batchConfigSchema.parse({ estimator: 'grpo', maxTokens: 72 }),
      (ref) => syntheticRollout(ref, options.get(ref.rolloutId)!),
      { tmpDir: dir },
    );
    return await readFile(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const bytes = await makeSampleFixture();
  await writeFile(FIXTURE_PATH, bytes);
  console.log(`wrote ${FIXTURE_PATH}: ${bytes.length} bytes`);
}
