/**
 * The calculator agents' text protocol, shared by the chat-completions agent (agent.ts) and the Responses API one
 * (../calculator-responses/agent.ts): the prompt, the worked example, the task and settings, and the agent's reaction
 * to each model turn.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ArithmeticError, evaluate, formatNumber } from './arithmetic.js';

export const taskSchema = z.object({ id: z.string(), input: z.object({ question: z.string().min(1) }) });
export const settingsSchema = z.object({
  OPENAI_MODEL: z.string().min(1).default('policy'),
  AGENT_TEMPERATURE: z.coerce.number().min(0).max(2).default(1.0),
  AGENT_MAX_TURNS: z.coerce.number().int().min(1).max(20).default(4),
  AGENT_MAX_TOKENS: z.coerce.number().int().min(1).max(4096).default(64),
});

export const SYSTEM_PROMPT = [
  'You solve math word problems with a calculator.',
  'To calculate, write <calc>expression</calc>, for example <calc>23*12-45</calc>, and wait for the result.',
  'When you know the final answer, write <answer>number</answer>.',
].join('\n');

// Repeated under each question: a 135M model forgets the system prompt's format, not the last line it read.
export const HINT = 'Use <calc>expression</calc> to calculate, then <answer>number</answer>.';
// One worked example: tiny models copy a demonstrated pattern far better than they follow instructions.
export const EXAMPLE: { role: 'user' | 'assistant'; content: string }[] = [
  { role: 'user', content: `Tom has 3 bags with 5 apples each. He eats 2 apples. How many apples are left?\n${HINT}` },
  { role: 'assistant', content: '<calc>3*5-2</calc>' },
  { role: 'user', content: 'Result: 13' },
  { role: 'assistant', content: '<answer>13</answer>' },
];

export function parseOrExplain<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(`invalid ${what}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
}

export function readTask(): z.infer<typeof taskSchema> {
  const raw =
    process.env.VOLT_TASK ??
    (process.env.VOLT_TASK_FILE ? readFileSync(process.env.VOLT_TASK_FILE, 'utf8') : undefined);
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
export function reactTo(content: string): { answer: string } | { reply: string } {
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
