import type { Task } from '../contracts/task.js';
import { sourceText } from './answer.js';
import type { SpecOf } from './spec.js';
import { RewardInfraError, type RewardContext, type RewardResult, type RolloutEvidence } from './types.js';

/** The chat request sent to the judge: rubric as system prompt, task input and the agent's answer as user turn. */
export function judgeMessages(spec: SpecOf<'llm_judge'>, task: Task, answer: string) {
  return [
    {
      role: 'system',
      content: `${spec.rubric}\n\nEnd your reply with a line "SCORE: <number from 0 to ${spec.maxScore}>".`,
    },
    { role: 'user', content: `Task:\n${JSON.stringify(task.input)}\n\nAnswer to grade:\n${answer}` },
  ];
}

/** Score in [0, maxScore] from the judge's text, or null when it did not give one. */
export function parseJudgeScore(text: string, spec: SpecOf<'llm_judge'>): number | null {
  let last: RegExpExecArray | null = null;
  for (const m of text.matchAll(new RegExp(spec.scorePattern, 'gi'))) last = m;
  const score = last ? Number(last[1] ?? last[0]) : NaN;
  return Number.isFinite(score) && score >= 0 && score <= spec.maxScore ? score : null;
}

/**
 * Ask an OpenAI-compatible judge directly (never via the gateway, so judge calls are never training data).
 * HTTP failure or an answer without a valid score is a RewardInfraError: the rollout is excluded, not zeroed.
 */
export async function llmJudge(
  spec: SpecOf<'llm_judge'>,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
): Promise<RewardResult> {
  const answer = sourceText(spec.source, evidence);
  if (answer === null || answer.trim() === '') return { value: 0, parts: { llm_judge: 0 }, flags: ['no_answer'] };
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (spec.apiKeyEnv) {
    const key = ctx.env[spec.apiKeyEnv];
    if (!key) throw new RewardInfraError('llm_judge', `env ${spec.apiKeyEnv} (llm_judge.apiKeyEnv) is not set`);
    headers.authorization = `Bearer ${key}`;
  }
  const signal = ctx.signal
    ? AbortSignal.any([ctx.signal, AbortSignal.timeout(spec.timeoutMs)])
    : AbortSignal.timeout(spec.timeoutMs);
  let body: unknown;
  try {
    const res = await fetch(`${spec.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers,
      signal,
      body: JSON.stringify({ model: spec.model, messages: judgeMessages(spec, task, answer), temperature: 0 }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${text.slice(0, 300)}`);
    body = JSON.parse(text);
  } catch (e) {
    throw new RewardInfraError('llm_judge', `judge call failed: ${(e as Error).message}`, { cause: e });
  }
  const content = (body as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
  if (typeof content !== 'string')
    throw new RewardInfraError('llm_judge', 'judge response has no choices[0].message.content');
  const score = parseJudgeScore(content, spec);
  if (score === null)
    throw new RewardInfraError('llm_judge', `unparseable judge answer: ${JSON.stringify(content.slice(0, 200))}`);
  const raw = score / spec.maxScore;
  return { value: raw * spec.weight, parts: { llm_judge: raw }, flags: [] };
}
