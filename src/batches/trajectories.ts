import type { Span } from '../contracts/span.js';
import { toTransition, type BreakReason, type Transition } from './transitions.js';

/** A sample before advantages: one prompt, then every merged call's tokens (loss_mask 0 for context in between). */
export interface Trajectory {
  spanIds: string[];
  promptIds: number[];
  responseIds: number[];
  lossMask: (0 | 1)[];
  logprobs: number[];
}

/** Where a rollout's calls could not continue one sample; `position` is the first differing prompt index. */
export interface MergeBreak {
  rolloutId: string;
  attempt: number;
  spanId: string;
  position: number | null;
  reason: BreakReason;
}

export interface AttemptTrajectories {
  trajectories: Trajectory[];
  breaks: MergeBreak[];
  /** Usable spans, and how many of them were appended to the sample before them. */
  transitions: number;
  merges: number;
  excluded: Record<'error_span' | 'missing_token_ids', number>;
}

function startTrajectory(t: Transition): Trajectory {
  return {
    spanIds: [t.spanId],
    promptIds: t.promptIds.slice(),
    responseIds: t.completionIds.slice(),
    lossMask: new Array<0 | 1>(t.completionIds.length).fill(1),
    logprobs: t.logprobs.slice(),
  };
}

/** Append `t` when its prompt starts exactly with everything the sample holds so far; else report where it differs. */
function tryMerge(cur: Trajectory, t: Transition): number {
  const { promptIds: held, responseIds: resp } = cur;
  const prompt = t.promptIds;
  const p = held.length;
  const total = p + resp.length;
  if (prompt.length < total) {
    // Shorter than what the sample holds: report the first difference, or where it ends.
    for (let i = 0; i < prompt.length; i++) if ((i < p ? held[i] : resp[i - p]) !== prompt[i]) return i;
    return prompt.length;
  }
  // Two tight loops (prompt part, then response part): this comparison is the builder's hot path.
  for (let i = 0; i < p; i++) if (held[i] !== prompt[i]) return i;
  for (let i = 0; i < resp.length; i++) if (resp[i] !== prompt[p + i]) return p + i;
  for (let i = total; i < prompt.length; i++) {
    resp.push(prompt[i]!);
    cur.lossMask.push(0);
    cur.logprobs.push(0);
  }
  const completion = t.completionIds;
  for (let i = 0; i < completion.length; i++) {
    resp.push(completion[i]!);
    cur.lossMask.push(1);
    cur.logprobs.push(t.logprobs[i]!);
  }
  cur.spanIds.push(t.spanId);
  return -1;
}

/**
 * Spans of one rollout attempt, in seq order → trajectories, merging multi-turn calls only on an exact prefix.
 * `supervised`: an SFT batch, which takes teacher spans too (transitions.ts). `merge` false: every call its own
 * trajectory (credit per turn gives each call its own advantage).
 */
export function buildTrajectories(spans: Iterable<Span>, supervised = false, merge = true): AttemptTrajectories {
  const out: AttemptTrajectories = {
    trajectories: [],
    breaks: [],
    transitions: 0,
    merges: 0,
    excluded: { error_span: 0, missing_token_ids: 0 },
  };
  let cur: Trajectory | null = null;
  for (const span of spans) {
    const t = toTransition(span, supervised);
    if (typeof t === 'string') {
      out.excluded[t] += 1;
      out.breaks.push({
        rolloutId: span.rolloutId,
        attempt: span.attempt,
        spanId: span.spanId,
        position: null,
        reason: t,
      });
      cur = null;
      continue;
    }
    out.transitions += 1;
    if (cur !== null && merge) {
      const diff = tryMerge(cur, t);
      if (diff === -1) {
        out.merges += 1;
        continue;
      }
      out.breaks.push({
        rolloutId: span.rolloutId,
        attempt: span.attempt,
        spanId: span.spanId,
        position: diff,
        reason: 'prefix_mismatch',
      });
    }
    cur = startTrajectory(t);
    out.trajectories.push(cur);
  }
  return out;
}
