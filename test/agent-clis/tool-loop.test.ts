import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import {
  ROOT,
  assertRecorded,
  describeCalls,
  missing,
  runAgentRollout,
  startAgentCliStack,
  type AgentCliStack,
  type AgentRollout,
} from './harness.js';
import { startToolCallEngine, type ToolCallEngine } from './tool-call-engine.js';

// The real Claude Code, Codex CLI and the Python agent frameworks each run a whole tool loop in the sandbox: the engine (FAKE,
// scripted: the 135M model rarely writes a parseable tool call) asks for `ls` with the agent's own shell tool, the
// agent runs it in its workdir and sends the result back through its API; the gateway must carry the result to the
// engine as a chat tool message answering that call.
const MARKER = 'volt-marker-file.txt';

let engine: ToolCallEngine;
let stack: AgentCliStack;
before(async () => {
  engine = await startToolCallEngine();
  stack = await startAgentCliStack(engine.url);
});
after(async () => {
  await stack?.stop();
  await engine?.close();
});

async function toolLoop(
  t: TestContext,
  rolloutId: string,
  command: string[],
  env: Record<string, string> = {},
): Promise<AgentRollout> {
  const run = await runAgentRollout(stack, {
    rolloutId,
    groupId: `g-${rolloutId}`,
    command,
    taskInput: { instructions: 'List the files here.' },
    env,
    maxTokensPerCall: 64,
    timeoutMs: 180_000,
    prepareWorkdir: (workdir) => writeFile(path.join(workdir, MARKER), 'x'),
  });
  for (const line of describeCalls(run)) t.diagnostic(line);
  assert.equal(
    run.result.outcome,
    'succeeded',
    `${run.result.detail}\n${run.stdout.slice(-2000)}\n${run.stderr.slice(-3000)}`,
  );
  return run;
}

/** The chat messages the engine got for a span, and the tool message that answers the engine's earlier call. */
function toolMessage(run: AgentRollout): { tool_call_id: string; content: string } {
  const withResult = run.spans.find((s) =>
    (s.upstreamRequest as { messages: { role: string }[] }).messages.some((m) => m.role === 'tool'),
  );
  assert.ok(withResult, `no call carried a tool result: ${describeCalls(run).join('\n')}`);
  const messages = (withResult.upstreamRequest as { messages: { role: string; tool_calls?: { id: string }[] }[] })
    .messages;
  const tool = messages.find((m) => m.role === 'tool') as unknown as { tool_call_id: string; content: unknown };
  const asked = messages.flatMap((m) => m.tool_calls ?? []).map((c) => c.id);
  assert.ok(
    asked.includes(tool.tool_call_id),
    `tool result ${tool.tool_call_id} answers a call of ${asked.join(', ')}`,
  );
  const content = typeof tool.content === 'string' ? tool.content : JSON.stringify(tool.content);
  return { tool_call_id: tool.tool_call_id, content };
}

void describe('real agents run a tool loop through the gateway (scripted engine)', () => {
  void it(
    'Claude Code: tool_use Bash → runs ls → tool_result back as a chat tool message',
    { skip: missing(path.join(ROOT, 'node_modules/.bin/claude')) },
    async (t) => {
      const run = await toolLoop(t, 'claude-tools', ['node', path.join(ROOT, 'examples/agent-clis/claude-code.mjs')], {
        CLAUDE_TOOLS: 'Bash',
      });
      assertRecorded(run, 'messages');
      assert.match(toolMessage(run).content, new RegExp(MARKER));
      const last = run.spans.at(-1)!.request.body as { messages: { role: string; content: unknown }[] };
      assert.ok(JSON.stringify(last.messages).includes('"tool_result"'), 'Claude Code sent a tool_result block');
      assert.equal(run.result.outputText, 'I listed the files.');
    },
  );

  void it(
    'Codex CLI: function_call exec_command → runs ls → function_call_output back as a chat tool message',
    { skip: missing(path.join(ROOT, 'node_modules/.bin/codex')) },
    async (t) => {
      const run = await toolLoop(t, 'codex-tools', ['node', path.join(ROOT, 'examples/agent-clis/codex.mjs')]);
      assertRecorded(run, 'responses');
      assert.match(toolMessage(run).content, new RegExp(MARKER));
      const last = run.spans.at(-1)!.request.body as { input: { type?: string }[] };
      assert.ok(
        last.input.some((i) => i.type === 'function_call_output'),
        'Codex sent a function_call_output item',
      );
      assert.equal(run.result.outputText?.trim(), 'I listed the files.');
    },
  );

  // The Vercel AI SDK's three providers, whole and streamed: its Anthropic provider appends `/messages` to
  // ANTHROPIC_BASE_URL (it expects the `/v1` there), so this also covers the gateway's unversioned Messages path.
  const aiSdk = path.join(ROOT, 'examples/agent-clis/ai-sdk-agent.mjs');
  for (const [provider, api] of [
    ['openai-responses', 'responses'],
    ['openai-chat', 'chat.completions'],
    ['anthropic', 'messages'],
  ] as const)
    for (const stream of [false, true])
      void it(
        `Vercel AI SDK, ${provider}${stream ? ', streamed' : ''}: its tool call → runs in the workdir → the result back`,
        { skip: missing(path.join(ROOT, 'node_modules/ai')) },
        async (t) => {
          const argv = ['node', aiSdk, provider, ...(stream ? ['--stream'] : [])];
          const run = await toolLoop(t, `ai-sdk-${provider}${stream ? '-stream' : ''}`, argv);
          assertRecorded(run, api);
          assert.ok(
            run.spans.every((s) => s.stream === stream),
            'every call in the mode the agent asked for',
          );
          assert.match(toolMessage(run).content, new RegExp(MARKER));
          assert.equal(run.result.outputText?.trim(), 'I listed the files.');
        },
      );

  const python = path.join(ROOT, '.venv-agents/bin/python');
  const script = (name: string, ...args: string[]) => [python, path.join(ROOT, 'examples/agent-clis', name), ...args];
  for (const [name, argv, api] of [
    ['OpenAI Agents SDK', script('openai_agents_agent.py'), 'responses'],
    ['Pydantic AI, OpenAIChatModel', script('pydantic_ai_agent.py', 'openai-chat'), 'chat.completions'],
    ['Pydantic AI, OpenAIResponsesModel', script('pydantic_ai_agent.py', 'openai-responses'), 'responses'],
    ['Pydantic AI, AnthropicModel', script('pydantic_ai_agent.py', 'anthropic'), 'messages'],
    ['Claude Agent SDK', script('claude_agent_sdk_agent.py'), 'messages'],
    ['mini-swe-agent', script('mini_swe_agent.py'), 'chat.completions'],
  ] as const)
    void it(`${name}: its tool call → runs in the workdir → the result back`, { skip: missing(python) }, async (t) => {
      const run = await toolLoop(t, name.toLowerCase().replace(/[^a-z]+/g, '-'), [...argv]);
      assertRecorded(run, api);
      assert.match(toolMessage(run).content, new RegExp(MARKER));
    });
});
