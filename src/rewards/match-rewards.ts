import type { Task } from '../contracts/task.js';
import { extractAnswer, normaliseAnswer, parseNumber, sourceText } from './answer.js';
import type { SpecOf } from './spec.js';
import type { RewardResult, RolloutEvidence } from './types.js';

function expected(task: Task, key: string): unknown {
  const value = task.reference?.[key];
  if (value === undefined) throw new Error(`task ${task.id}: reference.${key} is missing`);
  return value;
}

/** Training-only credit for a wrong number, by its relative distance from the reference (0 when twice as far or more off). */
function nearMissCredit(got: number, want: number): number {
  return Math.max(0, 1 - Math.abs(got - want) / Math.max(Math.abs(want), 1));
}

/** 1 when the answer is within `tolerance` (absolute) of the reference; in training, optionally partial credit for near misses. */
export function numericMatch(spec: SpecOf<'numeric_match'>, task: Task, evidence: RolloutEvidence): RewardResult {
  const want = Number(expected(task, spec.referenceKey));
  if (!Number.isFinite(want)) throw new Error(`task ${task.id}: reference.${spec.referenceKey} is not a number`);
  const answer = extractAnswer(sourceText(spec.source, evidence), spec.pattern);
  if (answer === null) return { value: 0, parts: { numeric_match: 0 }, flags: ['no_answer'] };
  const got = parseNumber(answer);
  if (got === null) return { value: 0, parts: { numeric_match: 0 }, flags: ['unparseable_answer'] };
  const ok = Math.abs(got - want) <= spec.tolerance;
  if (ok || spec.partialCredit === 0 || evidence.result.mode !== 'train') {
    return { value: ok ? spec.weight : 0, parts: { numeric_match: ok ? 1 : 0 }, flags: [] };
  }
  const credit = spec.partialCredit * nearMissCredit(got, want);
  return {
    value: credit * spec.weight,
    parts: { numeric_match: 0, near_miss: credit },
    flags: credit > 0 ? ['near_miss'] : [],
  };
}

/** 1 when the answer equals the reference (or one of a list of accepted references). */
export function stringMatch(spec: SpecOf<'string_match'>, task: Task, evidence: RolloutEvidence): RewardResult {
  const raw = expected(task, spec.referenceKey);
  const accepted = (Array.isArray(raw) ? raw : [raw]).map(String);
  const answer = extractAnswer(sourceText(spec.source, evidence), spec.pattern);
  if (answer === null) return { value: 0, parts: { string_match: 0 }, flags: ['no_answer'] };
  const norm = spec.mode === 'exact' ? (s: string) => s : normaliseAnswer;
  const ok = accepted.some((a) => norm(a) === norm(answer));
  return { value: ok ? spec.weight : 0, parts: { string_match: ok ? 1 : 0 }, flags: [] };
}
