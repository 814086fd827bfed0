import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestServices } from '../../helpers/services.js';
import { rolloutInput, type RunningGateway } from '../harness.js';
// The upstream is the FAKE scripted model server: a body that survives validation gets "Hello, world".
import { startScriptedGateway, stopScriptedGateway, type ScriptedUpstream } from '../scripted-upstream.js';
import { FUZZ_TARGETS, fuzz, mutatedBodies } from './agent-api-fuzz.js';

let services: TestServices, upstream: ScriptedUpstream, gw: RunningGateway;
before(async () => ({ services, upstream, gw } = await startScriptedGateway()));
after(() => stopScriptedGateway({ services, upstream, gw }));

void describe('structured-mutation fuzz of the agent CLIs first requests', () => {
  for (const target of FUZZ_TARGETS) {
    void it(`${target.api}: 1,000 mutated captures, no 5xx, every 4xx in the API's own error shape`, async () => {
      const { token } = await gw.admin.register(rolloutInput());
      const { statuses, byKind, bad } = await fuzz(gw.app, token, target, mutatedBodies(target, 1000, 31));
      assert.deepEqual(bad, []);
      assert.equal(
        [...statuses.values()].reduce((a, b) => a + b, 0),
        1000,
      );
      // Every outcome is exercised: mutations the API accepts, answered whole and streamed, and ones it refuses.
      for (const kind of ['stream 200', 'whole 200', 'whole 400'])
        assert.ok((byKind.get(kind) ?? 0) > 50, `${kind}: ${JSON.stringify([...byKind])}`);
    });
  }
});
