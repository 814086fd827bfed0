import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ROOT,
  assertRecorded,
  batchOf,
  describeCalls,
  missing,
  runAgentRollout,
  startAgentCliStack,
  type AgentCliStack,
} from './harness.js';

// The real Codex CLI (npm @openai/codex, pinned in package.json) through examples/agent-clis/codex.mjs, which writes
// ~/.codex/config.toml into the attempt's fresh HOME, in the local runner's bubblewrap sandbox, against the gateway and
// the real SmolLM2 server. What the model says is not judged.
const skip = missing(path.join(ROOT, 'node_modules/.bin/codex'));
const CAP = 48;

void describe('Codex CLI (codex exec) through the gateway, sandboxed, real model', { skip }, () => {
  let stack: AgentCliStack;
  before(async () => {
    stack = await startAgentCliStack();
  });
  after(async () => {
    await stack?.stop();
  });

  void it('two rollouts of a group: Responses calls recorded with engine tokens, no protocol error, a batch', async (t) => {
    const runs = [];
    for (const rolloutId of ['codex-0', 'codex-1'])
      runs.push(
        await runAgentRollout(stack, {
          rolloutId,
          groupId: 'g-codex',
          command: ['node', path.join(ROOT, 'examples/agent-clis/codex.mjs')],
          taskInput: { instructions: 'Run `ls` with exec_command, then say what you saw.' },
          maxTokensPerCall: CAP,
          timeoutMs: 240_000,
        }),
      );
    for (const run of runs) {
      for (const line of describeCalls(run)) t.diagnostic(line);
      t.diagnostic(
        `${run.result.ref.rolloutId}: ${run.result.outcome}, exit ${run.result.exitCode}, ${run.result.durationMs} ms`,
      );
      // Codex prints every error the API answered as `ERROR: <body>`; an answer the cap cut is its only other failure.
      const errors = run.stderr.split('\n').filter((l) => l.startsWith('ERROR:'));
      assert.deepEqual(
        errors.filter((l) => !l.includes('Incomplete response returned, reason: max_output_tokens')),
        [],
        run.stderr.slice(-3000),
      );
      assert.ok(
        run.result.outcome === 'succeeded' || (run.result.outcome === 'agent_failed' && errors.length > 0),
        `${run.result.outcome} (${run.result.detail}): ${run.stderr.slice(-3000)}`,
      );
      assertRecorded(run, 'responses');
      const first = run.spans[0]!;
      const body = first.request.body as Record<string, unknown>;
      // The provider config took: Codex spoke the Responses API, streamed, keeping its own history (store: false).
      assert.equal(body.model, 'volt-policy');
      assert.equal(body.stream, true);
      assert.equal(body.store, false);
      assert.ok(Array.isArray(body.tools) && body.tools.length > 0, 'Codex offered its tools');
      assert.ok(first.choices[0]!.tokenIds!.length <= CAP);
    }
    const { rows, spanIds } = await batchOf(stack, [
      { run: runs[0]!, reward: 1 },
      { run: runs[1]!, reward: 0 },
    ]);
    assert.ok(rows.length >= 2, `samples: ${rows.length}`);
    const recorded = new Set(runs.flatMap((r) => r.spans.map((s) => s.spanId)));
    assert.ok([...spanIds].every((id) => recorded.has(id)));
  });
});
