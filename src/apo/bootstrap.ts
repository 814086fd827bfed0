import type { ParentPrompt, Proposal } from './proposal.js';
import type { RolloutDigest } from './rollout-digest.js';
import { truncateMiddle } from './rollout-digest.js';
import { preferredSubset } from './seeded-subsets.js';

export const EXAMPLES_HEADING = 'Examples of correctly solved tasks:';
export const EXAMPLES_END = '(End of examples.)';
/** Worked steps shown per example before the final answer, and characters per example: overlays stay small. */
const MAX_STEPS = 6;
const MAX_EXAMPLE_CHARS = 1200;

export interface DemonstrationInput {
  parent: ParentPrompt;
  /** Rollouts of this round (any parent); the successful ones are the pool. */
  digests: readonly RolloutDigest[];
  /** One entry per child to propose: its position among all children of the call (seeds its subset). */
  childIndices: readonly number[];
  seed: number;
  round: number;
  demonstrations: number;
  minReward: number;
}

/** The task as the user put it: a lone string field as is (e.g. the question), anything else as JSON. */
export function taskText(input: Record<string, unknown>): string {
  const values = Object.values(input);
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : JSON.stringify(input);
}

/** One successful rollout as a worked example: the task, the turns after it, the final answer. */
export function renderExample(d: RolloutDigest, n: number): string {
  const question = taskText(d.task);
  let at = -1;
  d.transcript.forEach((m, i) => {
    if (m.role === 'user' && m.content.includes(question)) at = i;
  });
  // The transcript ends with the final answer; keep the worked steps between the task and it.
  const steps = at >= 0 ? d.transcript.slice(at + 1, -1).slice(-MAX_STEPS) : [];
  const lines = [`Example ${n}:`, `User: ${question}`];
  for (const m of steps) lines.push(`${m.role === 'assistant' ? 'Assistant' : 'User'}: ${m.content.trim()}`);
  lines.push(`Assistant: ${(d.finalAnswer ?? '').trim()}`);
  return truncateMiddle(lines.join('\n'), MAX_EXAMPLE_CHARS);
}

export function renderExamplesBlock(examples: readonly RolloutDigest[]): string {
  return [EXAMPLES_HEADING, ...examples.map((d, i) => renderExample(d, i + 1)), EXAMPLES_END].join('\n\n');
}

/** A template without its examples block (from the heading to the end marker, or to the end if that is missing). */
export function stripExamplesBlock(template: string): string {
  const start = template.indexOf(EXAMPLES_HEADING);
  if (start < 0) return template;
  const end = template.indexOf(EXAMPLES_END, start);
  const after = end < 0 ? '' : template.slice(end + EXAMPLES_END.length);
  return `${template.slice(0, start).trimEnd()}\n\n${after.trimStart()}`.trim();
}

/** Which of two examples teaches more of the agent's loop: more model calls (the loop went further), then higher reward. */
export const moreComplete = (a: RolloutDigest, b: RolloutDigest): number =>
  b.modelCalls - a.modelCalls || b.reward - a.reward;

/** Successful rollouts with an answer, one per task (its most complete one), in a stable order (task id, then rollout id). */
export function demonstrationPool(digests: readonly RolloutDigest[], minReward: number): RolloutDigest[] {
  const ok = digests.filter((d) => d.reward >= minReward && d.finalAnswer !== null && d.finalAnswer.trim() !== '');
  ok.sort((a, b) => a.taskId.localeCompare(b.taskId) || moreComplete(a, b) || a.rolloutId.localeCompare(b.rolloutId));
  return ok.filter((d, i) => i === 0 || ok[i - 1]!.taskId !== d.taskId);
}

/**
 * Bootstrapped demonstrations: each child gets its own seeded subset of the successful rollouts as worked examples,
 * the most complete ones first (a direct answer teaches the model to skip the agent's tools).
 * The agent's own prompt gets them appended (original kept); an overlay keeps its mode and has its examples block
 * replaced, never stacked. Fewer proposals (or none) when there are not enough distinct subsets.
 */
export function proposeDemonstrations(input: DemonstrationInput): Proposal[] {
  const pool = demonstrationPool(input.digests, input.minReward);
  if (pool.length === 0) return [];
  const base = input.parent.overlay;
  const kept = base ? stripExamplesBlock(base.template) : '';
  const taken = new Set<string>();
  const proposals: Proposal[] = [];
  for (const childIndex of input.childIndices) {
    const better = (i: number, j: number) => moreComplete(pool[i]!, pool[j]!);
    const subset = preferredSubset(
      pool.length,
      input.demonstrations,
      better,
      { seed: input.seed, round: input.round, childIndex },
      taken,
    );
    if (!subset) continue;
    taken.add(subset.join(','));
    const examples = subset.map((i) => pool[i]!);
    const block = renderExamplesBlock(examples);
    const template = kept ? `${kept}\n\n${block}` : block;
    if (base && template === base.template) continue;
    const used = examples.map((d) => `${d.rolloutId} (${d.taskId})`).join(', ');
    proposals.push({
      mode: base ? base.mode : 'append',
      template,
      note: `${examples.length} demonstrations from successful rollouts: ${used}`,
    });
  }
  return proposals;
}
