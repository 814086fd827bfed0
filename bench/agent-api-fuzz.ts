/**
 * Structured-mutation fuzz of `/v1/responses` and `/v1/messages` at scale: the agent CLIs' captured first requests,
 * mutated (test/gateway/agent-apis/agent-api-fuzz.ts), against a gateway with the FAKE scripted upstream and a real S3.
 * Prints a status histogram per API; exits 1 on any 5xx or any 4xx not in the API's own error shape.
 *
 *   node --import tsx bench/agent-api-fuzz.ts [--cases 10000] [--seed 31]
 */
import { parseArgs } from 'node:util';
import { rolloutInput } from '../test/gateway/harness.js';
import { startScriptedGateway, stopScriptedGateway } from '../test/gateway/scripted-upstream.js';
import { FUZZ_TARGETS, fuzz, mutatedBodies } from '../test/gateway/agent-apis/agent-api-fuzz.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '10000' }, seed: { type: 'string', default: '31' } },
});
const cases = Number(values.cases);
const seed = Number(values.seed);

const parts = await startScriptedGateway();
let failed = false;
try {
  for (const target of FUZZ_TARGETS) {
    const { token } = await parts.gw.admin.register(rolloutInput());
    const started = performance.now();
    const { byKind, bad } = await fuzz(parts.gw.app, token, target, mutatedBodies(target, cases, seed));
    const seconds = (performance.now() - started) / 1000;
    const histogram = [...byKind]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    console.log(`${target.api}: ${cases} cases in ${seconds.toFixed(1)} s; ${histogram}`);
    for (const b of bad) console.log(`  BAD ${b.status} ${b.body}\n    sent ${b.sent}`);
    failed ||= bad.length > 0;
  }
} finally {
  await stopScriptedGateway(parts);
}
process.exit(failed ? 1 : 0);
