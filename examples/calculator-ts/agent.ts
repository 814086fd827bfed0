/**
 * A calculator agent: the model asks for calculations with <calc>expr</calc>, the agent answers with the result,
 * and the model finishes with <answer>number</answer>. Plain text tags, because a 135M model follows them
 * more reliably than JSON tool calls.
 *
 * Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t1","input":{"question":"..."}}' \
 *      node --import tsx examples/calculator-ts/agent.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { ArithmeticError, evaluate, formatNumber } from './arithmetic.js';

const taskSchema = z.object({ id: z.string(), input: z.object({ question: z.string().min(1) }) });
const settingsSchema = z.object({
  OPENAI_MODEL: z.string().min(1).default('policy'),
  AGENT_TEMPERATURE: z.coerce.number().min(0).max(2).default(1.0),
  AGENT_MAX_TURNS: z.coerce.number().int().min(1).max(20).default(4),
  AGENT_MAX_TOKENS: z.coerce.number().int().min(1).max(4096).default(64),
});

const SYSTEM_PROMPT = [
  'You solve math word problems with a calculator.',
  'To calculate, write <calc>expression</calc>, for example <calc>23*12-45</calc>, and wait for the result.',
  'When you know the final answer, write <answer>number</answer>.',
].join('\n');

// Repeated under each question: a 135M model forgets the system prompt's format, not the last line it read.
const HINT = 'Use <calc>expression</calc> to calculate, then <answer>number</answer>.';
// One worked example: tiny models copy a demonstrated pattern far better than they follow instructions.
const EXAMPLE: ChatCompletionMessageParam[] = [
  { role: 'user', content: `Tom has 3 bags with 5 apples each. He eats 2 apples. How many apples are left?\n${HINT}` },
  { role: 'assistant', content: '<calc>3*5-2</calc>' },
  { role: 'user', content: 'Result: 13' },
  { role: 'assistant', content: '<answer>13</answer>' },
];

function parseOrExplain<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(`invalid ${what}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
}

function readTask(): z.infer<typeof taskSchema> {
  const raw = process.env.VOLT_TASK ?? (process.env.VOLT_TASK_FILE ? readFileSync(process.env.VOLT_TASK_FILE, 'utf8') : undefined);
  if (raw === undefined) throw new Error('no task: set VOLT_TASK or VOLT_TASK_FILE');
  return parseOrExplain(taskSchema, JSON.parse(raw), 'task');
}

// Units and labels ("12*7 (eggs)") are not arithmetic; drop them and the brackets they leave empty.
const withoutWords = (text: string) => text.replace(/[A-Za-z]{2,}/g, '').replace(/\(\s*\)/g, '');

/** The number an answer states: models often write "4*6 = 24" or just "4*6", so take the last side and compute it. */
function finalAnswer(text: string): string {
  const lastSide = text.split('=').at(-1)?.trim() ?? '';
  try {
    return formatNumber(evaluate(withoutWords(lastSide)));
  } catch {
    return text.trim();
  }
}

/** The agent's reply to one model turn: either the final answer or the next user message. */
function reactTo(content: string): { answer: string } | { reply: string } {
  // Tags may be left open when the server cut the text at the stop string.
  const answer = /<answer>([\s\S]*?)(?:<\/answer>|$)/.exec(content);
  if (answer) return { answer: finalAnswer(answer[1] ?? '') };
  const calc = /<calc>([\s\S]*?)(?:<\/calc>|$)/.exec(content);
  if (!calc) return { reply: 'Write <calc>expression</calc> to calculate or <answer>number</answer> to answer.' };
  try {
    // "<calc>5*2 = 10": the model guessed the result too; compute the left side.
    return { reply: `Result: ${formatNumber(evaluate(withoutWords((calc[1] ?? '').split('=')[0] ?? '')))}` };
  } catch (error) {
    if (error instanceof ArithmeticError) return { reply: `Error: ${error.message}` };
    throw error;
  }
}

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
    messages.push({ role: 'user', content: last ? `${next.reply}\nNow give the final answer as <answer>number</answer>.` : next.reply });
    process.stderr.write(`[turn ${turn}] agent: ${JSON.stringify(next.reply)}\n`);
  }
  if (process.env.VOLT_OUTPUT_FILE) writeFileSync(process.env.VOLT_OUTPUT_FILE, answer);
  process.stdout.write(`${answer}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`calculator agent failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
