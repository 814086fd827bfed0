/**
 * Write a run's report (index.html + curve.png) and print their paths; the same as `volt report`.
 *
 *   node --import tsx scripts/report.ts <runId> [--out DIR]
 */
import { parseArgs } from 'node:util';
import { loadEnv } from '../src/config/env.js';
import { buildRunReport } from '../src/report/build-report.js';

const { values, positionals } = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true });
const runId = positionals[0];
if (!runId || positionals.length > 1) {
  console.error('usage: node --import tsx scripts/report.ts <runId> [--out DIR]');
  process.exit(2);
}
try {
  const written = await buildRunReport(loadEnv(), runId, values.out);
  console.log(written.html);
  console.log(written.png);
  process.exit(0);
} catch (err) {
  console.error(`report ${runId}: ${(err as Error).message}`);
  process.exit(1);
}
