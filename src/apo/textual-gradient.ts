import { ORIGINAL_PROMPT_VARIABLE, type PromptOverlay } from '../contracts/prompt-overlay.js';
import { renderSystemPrompt } from '../prompts/system-prompt.js';
import { taskText } from './bootstrap.js';
import type { OptimizerClient, OptimizerMessage } from './optimizer-client.js';
import type { ParentPrompt, Proposal } from './proposal.js';
import { truncateMiddle, type RolloutDigest } from './rollout-digest.js';
import { mixSeed } from '../workflows/sampling.js';
import { seededSubset } from './seeded-subsets.js';

/** An edited prompt longer than this is not a prompt any more (the optimiser rambled); the child is skipped. */
export const MAX_EDITED_PROMPT_CHARS = 20_000;

export const CRITIQUE_SYSTEM = [
  "You are improving the system prompt of an LLM agent. The agent's code cannot change; only its system prompt can.",
  'You read conversations in which the agent failed and find what in the prompt could have caused the failures.',
].join(' ');

export type EditOutcome = { proposal: Proposal } | { skipped: string };

export interface EditInput {
  parent: ParentPrompt;
  /** The agent's own system message (from the spans), null when it sends none. */
  originalPrompt: string | null;
  /** The failed rollouts this child's critique is about (see selectFailures). */
  failures: readonly RolloutDigest[];
}

/** The system prompt a rollout under `overlay` runs with (the gateway's rendering); the optimiser is shown this. */
export function effectivePrompt(
  overlay: Pick<PromptOverlay, 'mode' | 'template'> | null,
  original: string | null,
): string {
  return overlay ? renderSystemPrompt(overlay, original ?? '') : (original ?? '');
}

/** Up to `count` failed rollouts of the parent, a different seeded choice per child. */
export function selectFailures(
  digests: readonly RolloutDigest[],
  minReward: number,
  count: number,
  key: { seed: number; round: number; childIndex: number },
): RolloutDigest[] {
  const failed = digests.filter((d) => d.reward < minReward).sort((a, b) => a.rolloutId.localeCompare(b.rolloutId));
  return seededSubset(failed.length, count, mixSeed(key.seed, key.round, key.childIndex)).map((i) => failed[i]!);
}

/** What the task should have produced: reference.answer when there is one, else the whole reference. */
function expectedAnswer(reference: unknown): string | null {
  if (reference === undefined || reference === null) return null;
  const answer =
    typeof reference === 'object' && 'answer' in reference ? (reference as { answer: unknown }).answer : reference;
  return truncateMiddle(typeof answer === 'string' ? answer : JSON.stringify(answer), 500);
}

function renderFailure(d: RolloutDigest, n: number): string {
  const expected = expectedAnswer(d.reference);
  return [
    `## Failure ${n} (reward ${d.reward})`,
    `Task: ${taskText(d.task)}`,
    ...(expected !== null ? [`Expected answer: ${expected}`] : []),
    'Conversation:',
    ...d.transcript.map((m) => `${m.role}: ${m.content}`),
  ].join('\n');
}

export function critiqueRequest(input: EditInput): OptimizerMessage[] {
  const current = effectivePrompt(input.parent.overlay, input.originalPrompt);
  const original =
    input.originalPrompt === null
      ? []
      : input.parent.overlay === null
        ? ["(This is the agent's original system prompt.)"]
        : [
            "The agent's original system prompt, which the current one was derived from:",
            '<original_prompt>',
            input.originalPrompt,
            '</original_prompt>',
          ];
  const user = [
    "The agent's current system prompt:",
    '<current_prompt>',
    current,
    '</current_prompt>',
    ...original,
    '',
    `The agent failed these ${input.failures.length} tasks:`,
    '',
    input.failures.map((d, i) => renderFailure(d, i + 1)).join('\n\n'),
    '',
    'Give up to three short reasons why the current prompt could have led to these failures, and for each what the prompt should say instead.',
  ].join('\n');
  return [
    { role: 'system', content: CRITIQUE_SYSTEM },
    { role: 'user', content: user },
  ];
}

export function editInstruction(originalPrompt: string | null): string {
  const keep =
    originalPrompt === null
      ? ''
      : ` You may write ${ORIGINAL_PROMPT_VARIABLE} to include the agent's original system prompt unchanged.`;
  return (
    'Now write an improved version of the whole system prompt that fixes these problems. Keep what works, stay concise, ' +
    `and keep the output format the agent expects.${keep} Put the new prompt between <prompt> and </prompt>.`
  );
}

/** The last complete <prompt>…</prompt> of an answer, trimmed; null when there is none or it is empty. */
export function parsePromptTag(answer: string | null): string | null {
  if (answer === null) return null;
  const matches = [...answer.matchAll(/<prompt>([\s\S]*?)<\/prompt>/g)];
  const text = matches.at(-1)?.[1]?.trim();
  return text ? text : null;
}

/**
 * One ProTeGi step for one child: a critique call (the "gradient") on the failures, then an edit call in the same
 * conversation. The edited prompt becomes a 'replace' overlay, holding {{original}} only where the optimiser kept it.
 */
export async function proposeEdit(client: OptimizerClient, input: EditInput): Promise<EditOutcome> {
  if (input.failures.length === 0) return { skipped: 'no failed rollouts to critique' };
  const critiqueMessages = critiqueRequest(input);
  const critique = await client.complete(critiqueMessages);
  if (!critique?.trim()) return { skipped: 'optimiser returned an empty critique' };
  const edited = await client.complete([
    ...critiqueMessages,
    { role: 'assistant', content: critique },
    { role: 'user', content: editInstruction(input.originalPrompt) },
  ]);
  const template = parsePromptTag(edited);
  if (template === null) return { skipped: 'optimiser answer has no <prompt>…</prompt>' };
  if (template.length > MAX_EDITED_PROMPT_CHARS)
    return { skipped: `edited prompt has ${template.length} characters (limit ${MAX_EDITED_PROMPT_CHARS})` };
  const current = effectivePrompt(input.parent.overlay, input.originalPrompt);
  if (effectivePrompt({ mode: 'replace', template }, input.originalPrompt) === current)
    return { skipped: 'edited prompt is unchanged' };
  const gist = truncateMiddle(
    critique
      .trim()
      .split('\n')
      .find((l) => l.trim()) ?? '',
    200,
  );
  return {
    proposal: { mode: 'replace', template, note: `critique of ${input.failures.length} failed rollouts: ${gist}` },
  };
}
