// A one-call arithmetic agent on the openai npm SDK: one chat completion; the reply's last number is the answer.
//
// The single-call task that Volt's loop and TRL's GRPOTrainer both run in bench/learning-vs-trl.ts: the prompt is
// prompt.json (the system line and one worked example, then the question), which bench/learning_trl.py reads too, and
// the answer is the reply's last number (learning_trl.py's last_number is the same rule), written to VOLT_OUTPUT_FILE
// for the reward (numeric_match) to compare with the reference.
//
// Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t1","input":{"question":"What is 12 + 7?"}}' \
//      node examples/arithmetic/agent.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import OpenAI from 'openai';

const prompt = JSON.parse(readFileSync(new URL('prompt.json', import.meta.url), 'utf8'));

/** The reply's last number ("59 + 63 = 122" → "122"); empty when it has none. */
export function lastNumber(text) {
  const numbers = text.replaceAll(',', '').match(/-?\d+(?:\.\d+)?/g);
  return numbers ? numbers[numbers.length - 1] : '';
}

function readTask() {
  const raw = process.env.VOLT_TASK ?? (process.env.VOLT_TASK_FILE && readFileSync(process.env.VOLT_TASK_FILE, 'utf8'));
  if (!raw) throw new Error('no task: set VOLT_TASK or VOLT_TASK_FILE');
  const task = JSON.parse(raw);
  if (typeof task?.input?.question !== 'string' || !task.input.question)
    throw new Error('invalid task: input.question must be a non-empty string');
  return task;
}

async function main() {
  const task = readTask();
  const client = new OpenAI({ timeout: 120_000 });
  const completion = await client.chat.completions.create({
    model: process.env.OPENAI_MODEL ?? 'policy',
    messages: [
      { role: 'system', content: prompt.system },
      ...prompt.example,
      { role: 'user', content: task.input.question },
    ],
    max_tokens: Number(process.env.AGENT_MAX_TOKENS ?? 32),
    temperature: Number(process.env.AGENT_TEMPERATURE ?? 1),
  });
  const content = completion.choices[0]?.message.content ?? '';
  console.error(`model: ${JSON.stringify(content)}`);
  const answer = lastNumber(content);
  if (process.env.VOLT_OUTPUT_FILE) writeFileSync(process.env.VOLT_OUTPUT_FILE, answer);
  console.log(answer);
}

main().catch((error) => {
  console.error(`arithmetic agent failed: ${error?.name ?? 'Error'}: ${error?.message ?? error}`);
  process.exit(1);
});
