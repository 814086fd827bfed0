#!/usr/bin/env node
// An unmodified-style agent: the stock OpenAI SDK reads OPENAI_BASE_URL and OPENAI_API_KEY from the environment.
import { readFileSync, writeFileSync } from 'node:fs';
import OpenAI from 'openai';

const task = JSON.parse(readFileSync(process.env.VOLT_TASK_FILE, 'utf8'));
if (JSON.stringify(task) !== process.env.VOLT_TASK) throw new Error('VOLT_TASK_FILE differs from VOLT_TASK');
const client = new OpenAI({ maxRetries: 0 });
const completion = await client.chat.completions.create({
  model: 'policy',
  messages: [{ role: 'user', content: String(task.input.question) }],
});
const answer = completion.choices[0].message.content;
writeFileSync(process.env.VOLT_OUTPUT_FILE, answer);
console.log(`answered ${task.id}: ${answer}`);
