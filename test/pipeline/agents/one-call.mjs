// A minimal real agent for pipeline-mechanics tests: one chat completion through OPENAI_BASE_URL with the `openai`
// SDK (AGENT_TEMPERATURE, default 1), the answer written to VOLT_OUTPUT_FILE. Fast to start, so the tests measure orchestration, not agents.
import { readFileSync, writeFileSync } from 'node:fs';
import OpenAI from 'openai';

const task = JSON.parse(process.env.VOLT_TASK ?? readFileSync(process.env.VOLT_TASK_FILE, 'utf8'));
const client = new OpenAI({ maxRetries: 5 });
const reply = await client.chat.completions.create({
  model: 'policy',
  messages: [{ role: 'user', content: `${task.input.question} Answer with a number only.` }],
  max_tokens: Number(process.env.AGENT_MAX_TOKENS ?? 24),
  temperature: Number(process.env.AGENT_TEMPERATURE ?? 1),
});
const text = reply.choices[0]?.message.content ?? '';
if (process.env.VOLT_OUTPUT_FILE) writeFileSync(process.env.VOLT_OUTPUT_FILE, text);
console.log(text);
