import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { Span } from '../../src/contracts/span.js';
import {
  ROOT,
  assertRecorded,
  batchOf,
  describeCalls,
  missing,
  runAgentRollout,
  startAgentCliStack,
  type AgentCliStack,
  type AgentRollout,
} from './harness.js';

// The Python agent frameworks (examples/agent-clis/requirements.txt, in .venv-agents), each unmodified but for where
// it is pointed, in the local runner's bubblewrap sandbox, against the gateway and the real SmolLM2 server. Each
// agent exits 0 unless an API call failed (a model that runs out of turns or tokens is a result, not an error).
const python = path.join(ROOT, '.venv-agents/bin/python');
const skip = missing(python);
const CAP = 48;

let stack: AgentCliStack;
before(async () => {
  if (!skip) stack = await startAgentCliStack();
});
after(async () => {
  await stack?.stop();
});

/** Runs each argv (a script under examples/agent-clis and its arguments) as one rollout of a group, then batches them. */
async function group(t: TestContext, name: string, argvs: string[][], api: Span['api'] | Span['api'][]) {
  const runs: AgentRollout[] = [];
  for (const [i, argv] of argvs.entries()) {
    const [script, ...args] = argv as [string, ...string[]];
    const run = await runAgentRollout(stack, {
      rolloutId: `${name}-${i}`,
      groupId: `g-${name}`,
      command: [python, path.join(ROOT, 'examples/agent-clis', script), ...args],
      taskInput: { instructions: 'List the files here with the tool, then say how many there are.' },
      env: { AGENT_MAX_TOKENS: String(CAP), AGENT_MAX_TURNS: '2' },
      maxTokensPerCall: CAP,
      timeoutMs: 240_000,
    });
    for (const line of describeCalls(run)) t.diagnostic(line);
    t.diagnostic(
      `${run.result.ref.rolloutId}: ${run.result.outcome}, exit ${run.result.exitCode}, ${run.result.durationMs} ms`,
    );
    assert.equal(run.result.outcome, 'succeeded', `${run.result.detail}\n${run.stderr.slice(-3000)}`);
    assertRecorded(run, Array.isArray(api) ? api[i]! : api);
    runs.push(run);
  }
  const { rows, spanIds } = await batchOf(
    stack,
    runs.map((run, i) => ({ run, reward: i % 2 })),
  );
  assert.ok(rows.length >= 2, `samples: ${rows.length}`);
  const recorded = new Set(runs.flatMap((r) => r.spans.map((s) => s.spanId)));
  assert.ok([...spanIds].every((id) => recorded.has(id)));
  return runs;
}

void describe('Python agent frameworks through the gateway, sandboxed, real model', { skip }, () => {
  void it('OpenAI Agents SDK (Responses API, a function tool)', async (t) => {
    const runs = await group(t, 'openai-agents', [['openai_agents_agent.py'], ['openai_agents_agent.py']], 'responses');
    const body = runs[0]!.spans[0]!.request.body as { tools?: { type: string; name: string }[] };
    assert.deepEqual(
      body.tools?.map((x) => [x.type, x.name]),
      [['function', 'list_files']],
    );
  });

  void it('Pydantic AI: OpenAIChatModel, OpenAIResponsesModel and AnthropicModel in one group', async (t) => {
    await group(
      t,
      'pydantic-ai',
      [
        ['pydantic_ai_agent.py', 'openai-chat'],
        ['pydantic_ai_agent.py', 'openai-responses'],
        ['pydantic_ai_agent.py', 'anthropic'],
      ],
      ['chat.completions', 'responses', 'messages'],
    );
  });

  void it('Claude Agent SDK (driving its bundled Claude Code CLI)', async (t) => {
    const runs = await group(
      t,
      'claude-agent-sdk',
      [['claude_agent_sdk_agent.py'], ['claude_agent_sdk_agent.py']],
      'messages',
    );
    const body = runs[0]!.spans[0]!.request.body as { max_tokens: number; thinking?: unknown };
    assert.ok(body.max_tokens > CAP && body.thinking, 'what Claude Code sends, through the SDK');
  });

  void it('mini-swe-agent (LitellmModel on chat completions, LocalEnvironment)', async (t) => {
    await group(t, 'mini-swe-agent', [['mini_swe_agent.py'], ['mini_swe_agent.py']], 'chat.completions');
  });
});
