import { existsSync, readFileSync } from 'node:fs';

/** The task's prompt from VOLT_TASK (or VOLT_TASK_FILE): `input.instructions`, `input.prompt`, `input.question`, or a string input. */
export function taskPrompt(env = process.env) {
  const raw = env.VOLT_TASK ?? (env.VOLT_TASK_FILE ? readFileSync(env.VOLT_TASK_FILE, 'utf8') : null);
  if (raw === null) throw new Error('no task: set VOLT_TASK or VOLT_TASK_FILE');
  const { input } = JSON.parse(raw);
  const prompt = typeof input === 'string' ? input : (input?.instructions ?? input?.prompt ?? input?.question);
  if (typeof prompt !== 'string' || prompt === '')
    throw new Error('invalid task: input must be a string or have instructions, prompt or question');
  return prompt;
}

/** A program installed by `npm ci` (node_modules/.bin), else the one on PATH. */
export function localBin(name) {
  const local = new URL(`../../node_modules/.bin/${name}`, import.meta.url).pathname;
  return existsSync(local) ? local : name;
}
