/**
 * The calculator agent on the OpenAI Responses API (`client.responses.create`), the way Responses agents keep state:
 * `instructions` for the system prompt, and the model's own output items sent back in `input` next turn. Same text
 * protocol as the chat agent (../calculator-ts/protocol.ts). The Responses API has no stop strings, so the agent
 * reads a turn up to its first closing tag; the model's whole output stays in the conversation.
 *
 * Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t1","input":{"question":"..."}}' \
 *      node --import tsx examples/calculator-responses/agent.ts
 */
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import {
  EXAMPLE,
  HINT,
  SYSTEM_PROMPT,
  parseOrExplain,
  reactTo,
  readTask,
  settingsSchema,
} from '../calculator-ts/protocol.js';

/** The turn as far as the agent reads it: up to the first </calc> or </answer>. */
function firstAction(text: string): string {
  const end = /<\/(calc|answer)>/.exec(text);
  return end ? text.slice(0, end.index) : text;
}

async function main(): Promise<void> {
  const settings = parseOrExplain(settingsSchema, process.env, 'environment');
  const task = readTask();
  const client = new OpenAI({ timeout: 120_000 });
  const input: ResponseInputItem[] = [...EXAMPLE, { role: 'user', content: `${task.input.question}\n${HINT}` }];
  let answer = '';
  for (let turn = 1; turn <= settings.AGENT_MAX_TURNS; turn++) {
    const response = await client.responses.create({
      model: settings.OPENAI_MODEL,
      instructions: SYSTEM_PROMPT,
      input,
      max_output_tokens: settings.AGENT_MAX_TOKENS,
      temperature: settings.AGENT_TEMPERATURE,
      store: false,
    });
    const content = response.output_text;
    process.stderr.write(`[turn ${turn}] model: ${JSON.stringify(content)}\n`);
    // The model's own output items go back as they came (this agent has no tools, so they are messages).
    for (const item of response.output) if (item.type === 'message') input.push(item);
    const next = reactTo(firstAction(content));
    if ('answer' in next) {
      answer = next.answer;
      break;
    }
    const last = turn === settings.AGENT_MAX_TURNS - 1;
    input.push({
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
