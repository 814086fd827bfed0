import type { Span } from '../contracts/span.js';
import type { Task } from '../contracts/task.js';
import { requestMessages } from '../prompts/message-text.js';
import { agentSystemPrompt, isSystemRole } from '../prompts/system-prompt.js';
import { readSpans, type SpanStore } from '../storage/spans.js';
import { completedAnswers, completedText } from './stop-reason.js';
import type { RolloutRef } from '../contracts/rollout.js';

/** Digests go into optimiser prompts and overlays, so every text in one is bounded. */
export const DIGEST_LIMITS = {
  messageChars: 1500,
  headMessages: 2,
  tailMessages: 10,
  systemPromptChars: 20_000,
  spans: 32,
} as const;

/** One rollout as the proposers see it: the task, its reward, and a bounded transcript of the agent's conversation. */
export interface RolloutDigest {
  rolloutId: string;
  taskId: string;
  reward: number;
  task: Task['input'];
  reference?: unknown;
  /** The agent's last request (system message left out) and the final response, long messages cut, middle turns dropped. */
  transcript: { role: string; content: string }[];
  /** Text of the final model response (what the agent read last), null when no call succeeded. */
  finalAnswer: string | null;
  /** The agent's own system message as it sent it (what {{original}} renders as), null when it sent none. */
  agentSystemPrompt: string | null;
  /** Successful model calls of the attempt (among its last DIGEST_LIMITS.spans): how far the agent's loop went. */
  modelCalls: number;
}

export interface DigestRef {
  ref: RolloutRef;
  taskId: string;
  reward: number;
}

/** Keep the start and end of a long text: instructions open a message, answers close it. */
export function truncateMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = `\n[… ${text.length - max} characters cut …]\n`;
  const head = Math.ceil((max - marker.length) / 2);
  return text.slice(0, Math.max(head, 0)) + marker + text.slice(text.length - Math.max(max - marker.length - head, 0));
}

/** Pure: the digest of a rollout attempt from its spans (any order) and its task. */
export function digestFromSpans(
  spans: readonly Span[],
  task: Task,
  meta: { rolloutId: string; reward: number },
): RolloutDigest {
  const ordered = [...spans].sort((a, b) => a.seq - b.seq);
  const lastOk = [...ordered].reverse().find((s) => s.status === 'ok');
  const last = lastOk ?? ordered[ordered.length - 1];
  const messages = last ? requestMessages(last.request.body) : [];
  const system = last ? agentSystemPrompt(last.request.body, last.api) : null;
  const finalChoice = lastOk ? (lastOk.choices.find((c) => c.index === 0) ?? lastOk.choices[0]) : undefined;
  const finalText = lastOk && finalChoice ? completedText(lastOk, finalChoice.index) : null;
  // Earlier answers come back from the agent cut at their stop strings too: show them as the model wrote them.
  const completed = completedAnswers(ordered);
  const conversation = messages
    .filter((m) => !isSystemRole(m.role))
    .map((m) =>
      m.role === 'assistant' && completed.has(m.content) ? { ...m, content: completed.get(m.content)! } : m,
    );
  if (finalText !== null) conversation.push({ role: 'assistant', content: finalText });
  const { headMessages, tailMessages, messageChars } = DIGEST_LIMITS;
  let kept = conversation;
  if (conversation.length > headMessages + tailMessages) {
    const dropped = conversation.length - headMessages - tailMessages;
    kept = [
      ...conversation.slice(0, headMessages),
      { role: 'note', content: `[… ${dropped} messages omitted …]` },
      ...conversation.slice(-tailMessages),
    ];
  }
  return {
    rolloutId: meta.rolloutId,
    taskId: task.id,
    reward: meta.reward,
    task: task.input,
    ...(task.reference !== undefined ? { reference: task.reference } : {}),
    transcript: kept.map((m) => ({ role: m.role, content: truncateMiddle(m.content, messageChars) })),
    finalAnswer: finalText === null ? null : truncateMiddle(finalText, messageChars),
    agentSystemPrompt: system === null ? null : truncateMiddle(system, DIGEST_LIMITS.systemPromptChars),
    modelCalls: ordered.filter((s) => s.status === 'ok').length,
  };
}

/** The attempt's last DIGEST_LIMITS.spans spans (spans list in sequence order): enough for the kept transcript. */
async function attemptSpans(store: SpanStore, ref: RolloutRef): Promise<Span[]> {
  const spans: Span[] = [];
  for await (const span of readSpans(store, ref)) spans.push(span);
  return spans.slice(-DIGEST_LIMITS.spans);
}

/** Read the digests of the given rollout attempts; a task missing from the task set is an error naming it. */
export async function loadRolloutDigests(
  store: SpanStore,
  refs: readonly DigestRef[],
  tasksById: ReadonlyMap<string, Task>,
): Promise<RolloutDigest[]> {
  const digests: RolloutDigest[] = [];
  for (const r of refs) {
    const task = tasksById.get(r.taskId);
    if (!task) throw new Error(`rollout ${r.ref.rolloutId}: task ${r.taskId} is not in the task set`);
    digests.push(
      digestFromSpans(await attemptSpans(store, r.ref), task, { rolloutId: r.ref.rolloutId, reward: r.reward }),
    );
  }
  return digests;
}
