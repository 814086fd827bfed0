/**
 * Prefix-merge rate of a multi-turn agent on each agent API, on the real SmolLM2 server through the gateway: the
 * calculator agent on chat completions (examples/calculator-ts), on the Responses API (examples/calculator-responses),
 * and the same protocol on the Messages API (an inline @anthropic-ai/sdk loop with stop_sequences). A follow-up call
 * merges when its prompt starts exactly with the previous prompt + response tokens (src/batches/trajectories.ts).
 * Run: node --import tsx bench/agent-api-merge.ts [--tasks 3]
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { EXAMPLE, HINT, SYSTEM_PROMPT, reactTo } from '../examples/calculator-ts/protocol.js';
import { buildTrajectories } from '../src/batches/trajectories.js';
import type { Span } from '../src/contracts/span.js';
import { readSpans } from '../src/storage/spans.js';
import { rolloutInput, startGateway, startStore } from '../test/gateway/harness.js';
import { SERVED_MODEL, startModelServer } from '../test/gateway/model-server.js';

const TASKS = Number(process.argv[process.argv.indexOf('--tasks') + 1]) || 3;
const QUESTIONS = [
  'Ana has 12 apples and gets 5 more. How many apples does Ana have now?',
  'A box holds 6 eggs. How many eggs are in 7 boxes?',
  'Tim had 40 marbles and lost 15. How many marbles are left?',
  'Each of 4 friends pays 9 dollars. How much do they pay together?',
];
const root = path.resolve(import.meta.dirname, '..');
const SETTINGS = { AGENT_MAX_TURNS: '3', AGENT_MAX_TOKENS: '24', AGENT_TEMPERATURE: '0', OPENAI_MODEL: 'policy' };

function runProcess(argv: string[], env: Record<string, string>): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: 'ignore',
    });
    child.on('error', reject);
    child.on('close', resolve);
  });
}

/** The calculator protocol on the Messages API: stop_sequences cut each turn at its closing tag. */
async function messagesAgent(baseURL: string, apiKey: string, question: string): Promise<void> {
  const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
  const messages: Anthropic.MessageParam[] = [...EXAMPLE, { role: 'user', content: `${question}\n${HINT}` }];
  for (let turn = 1; turn <= Number(SETTINGS.AGENT_MAX_TURNS); turn++) {
    const res = await client.messages.create({
      model: 'policy',
      system: SYSTEM_PROMPT,
      messages,
      max_tokens: Number(SETTINGS.AGENT_MAX_TOKENS),
      stop_sequences: ['</calc>', '</answer>'],
      temperature: 0,
    } as Anthropic.MessageCreateParamsNonStreaming);
    const text = res.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    messages.push({ role: 'assistant', content: text });
    const next = reactTo(text);
    if ('answer' in next) return;
    messages.push({ role: 'user', content: next.reply });
  }
}

const [{ services, store }, model] = await Promise.all([startStore(), startModelServer()]);
const gw = await startGateway(store, services.dataDir, model.url);
try {
  const apis = ['chat.completions', 'responses', 'messages'] as const;
  const totals = new Map<string, { calls: number; followUps: number; merges: number; rollouts: number }>();
  for (let t = 0; t < TASKS; t++) {
    const question = QUESTIONS[t % QUESTIONS.length]!;
    for (const api of apis) {
      const ref = rolloutInput({ policyModel: SERVED_MODEL });
      const { token, baseUrl } = await gw.admin.register(ref);
      const env = {
        ...SETTINGS,
        OPENAI_BASE_URL: baseUrl,
        OPENAI_API_KEY: token,
        VOLT_TASK: JSON.stringify({ id: `t${t}`, input: { question } }),
      };
      if (api === 'chat.completions')
        await runProcess([path.join(root, 'node_modules/.bin/tsx'), 'examples/calculator-ts/agent.ts'], env);
      else if (api === 'responses')
        await runProcess([path.join(root, 'node_modules/.bin/tsx'), 'examples/calculator-responses/agent.ts'], env);
      else await messagesAgent(baseUrl.replace(/\/v1$/, ''), token, question);
      await gw.admin.close(token);
      const spans: Span[] = [];
      for await (const s of readSpans(store, ref)) spans.push(s);
      const tr = buildTrajectories(spans);
      const acc = totals.get(api) ?? { calls: 0, followUps: 0, merges: 0, rollouts: 0 };
      acc.calls += tr.transitions;
      acc.followUps += Math.max(0, tr.transitions - 1);
      acc.merges += tr.merges;
      acc.rollouts++;
      totals.set(api, acc);
      // Where a break lands against the previous call: at prompt + k, the previous answer's k-th token differs.
      const at = (spanId: string) => {
        const prev = spans[spans.findIndex((s) => s.spanId === spanId) - 1];
        const answer = prev?.choices[0]?.tokenIds ?? [];
        return prev
          ? ` (previous call: ${prev.promptTokenIds?.length ?? '?'} prompt + ${answer.length} answer tokens, answer text ${JSON.stringify(prev.choices[0]?.text ?? '')})`
          : '';
      };
      console.log(
        `task ${t} ${api}: ${spans.length} spans (${[...new Set(spans.map((s) => s.api))].join(',')}), ${tr.merges} merges, breaks: ${tr.breaks.map((b) => `${b.reason}@${b.position}${at(b.spanId)}`).join(' ') || 'none'}`,
      );
    }
  }
  console.log(
    `\nMerge rate per API (${TASKS} tasks, greedy, ${SETTINGS.AGENT_MAX_TURNS} turns max, ${SETTINGS.AGENT_MAX_TOKENS} tokens a turn), load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}:`,
  );
  for (const [api, a] of totals)
    console.log(
      `  ${api.padEnd(17)} ${a.rollouts} rollouts, ${a.calls} calls, ${a.merges}/${a.followUps} follow-up calls merged (${a.followUps ? ((100 * a.merges) / a.followUps).toFixed(0) : 'n/a'} %)`,
    );
} finally {
  await gw.close();
  await model.stop();
  await services.stop();
}
