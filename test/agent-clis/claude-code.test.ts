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

// The real Claude Code (npm @anthropic-ai/claude-code, pinned in package.json) through examples/agent-clis/claude-code.mjs,
// in the local runner's bubblewrap sandbox, against the gateway and the real SmolLM2 server. What the model says is not judged.
const skip = missing(path.join(ROOT, 'node_modules/.bin/claude'));
const CAP = 48;

void describe('Claude Code (claude -p) through the gateway, sandboxed, real model', { skip }, () => {
  let stack: AgentCliStack;
  before(async () => {
    stack = await startAgentCliStack();
  });
  after(async () => {
    await stack?.stop();
  });

  void it('two rollouts of a group: Messages calls recorded with engine tokens, no protocol error, a batch', async (t) => {
    const runs = [];
    for (const rolloutId of ['claude-0', 'claude-1'])
      runs.push(
        await runAgentRollout(stack, {
          rolloutId,
          groupId: 'g-claude',
          command: ['node', path.join(ROOT, 'examples/agent-clis/claude-code.mjs')],
          taskInput: { instructions: 'Run `ls` with the Bash tool, then say what you saw.' },
          env: { CLAUDE_MAX_TURNS: '2' },
          maxTokensPerCall: CAP,
          timeoutMs: 420_000,
        }),
      );
    for (const run of runs) {
      for (const line of describeCalls(run)) t.diagnostic(line);
      t.diagnostic(
        `${run.result.ref.rolloutId}: ${run.result.outcome}, exit ${run.result.exitCode}, ${run.result.durationMs} ms`,
      );
      // claude -p ended its loop and printed its result document; no HTTP error reached it (api_error_status).
      const doc = JSON.parse(run.stdout) as {
        type: string;
        subtype: string;
        api_error_status: unknown;
        api_error?: string;
      };
      assert.equal(doc.type, 'result', run.stdout);
      assert.equal(doc.api_error_status, null, run.stdout);
      // It ends on its own, at --max-turns, or when the per-call cap cut every answer: Claude Code asks the model to
      // resume a cut answer up to 3 times, then gives up, as it would with a real API at that max_tokens.
      assert.ok(
        run.result.outcome === 'succeeded' ||
          doc.subtype === 'error_max_turns' ||
          doc.api_error === 'max_output_tokens',
        `${run.result.outcome}: ${run.stdout}`,
      );
      assertRecorded(run, 'messages');
      const first = run.spans[0]!;
      const body = first.request.body as Record<string, unknown>;
      // What Claude Code sends that a chat engine has no field for reached the gateway and was accepted.
      assert.ok(body.stream, 'streamed');
      assert.ok(body.thinking && body.metadata, JSON.stringify(Object.keys(body)));
      assert.match(String((body.metadata as { user_id?: unknown }).user_id), /.+/);
      assert.ok((body.max_tokens as number) > CAP);
      assert.ok(
        first.translation.includes(
          `max_tokens ${String(body.max_tokens)} clamped to ${CAP}: the rollout's per-call cap`,
        ),
        first.translation.join('\n'),
      );
      assert.ok(first.choices[0]!.tokenIds!.length <= CAP);
      if (run.result.outcome === 'succeeded')
        assert.equal(run.result.outputText, (JSON.parse(run.stdout) as { result: string }).result);
    }
    const { rows, spanIds } = await batchOf(stack, [
      { run: runs[0]!, reward: 1 },
      { run: runs[1]!, reward: 0 },
    ]);
    assert.ok(rows.length >= 2, `samples: ${rows.length}`);
    const recorded = new Set(runs.flatMap((r) => r.spans.map((s) => s.spanId)));
    assert.ok([...spanIds].every((id) => recorded.has(id)));
    assert.ok(rows.every((r) => r.response_ids.length > 0 && r.advantage !== 0));
  });
});
