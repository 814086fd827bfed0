/**
 * A calculator agent: the model asks for calculations with <calc>expr</calc>, the agent answers with the result,
 * and the model finishes with <answer>number</answer>. Plain text tags, because a 135M model follows them
 * more reliably than JSON tool calls.
 *
 * Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t1","input":{"question":"..."}}' \
 *      node --import tsx examples/calculator-ts/agent.ts
 */
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { EXAMPLE, HINT, SYSTEM_PROMPT, parseOrExplain, reactTo, readTask, settingsSchema } from './protocol.js';

async function main(): Promise<void> {
  const settings = parseOrExplain(settingsSchema, process.env, 'environment');
  const task = readTask();
  const client = new OpenAI({ timeout: 120_000 });
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    ...EXAMPLE,
    { role: 'user', content: `${task.input.question}\n${HINT}` },
  ];
  let answer = '';
  for (let turn = 1; turn <= settings.AGENT_MAX_TURNS; turn++) {
    const completion = await client.chat.completions.create({
      model: settings.OPENAI_MODEL,
      messages,
      max_tokens: settings.AGENT_MAX_TOKENS,
      temperature: settings.AGENT_TEMPERATURE,
      stop: ['</calc>', '</answer>'],
    });
    const content = completion.choices[0]?.message.content ?? '';
    process.stderr.write(`[turn ${turn}] model: ${JSON.stringify(content)}\n`);
    messages.push({ role: 'assistant', content });
    const next = reactTo(content);
    if ('answer' in next) {
      answer = next.answer;
      break;
    }
    const last = turn === settings.AGENT_MAX_TURNS - 1;
    messages.push({
      role: 'user',
      content: last ? `${next.reply}\nNow give the final answer as <answer>number</answer>.` : next.reply,
    });
    process.stderr.write(`[turn ${turn}] agent: ${JSON.stringify(next.reply)}\n`);
  }
  if (process.env.VOLT_OUTPUT_FILE) writeFileSync(process.env.VOLT_OUTPUT_FILE, answer);
  process.stdout.write(`${answer}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`calculator agent failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
