import type { PromptOverlay } from '../contracts/prompt-overlay.js';

export type ProposalStrategy = 'textual_gradient' | 'bootstrap';

/** A proposed child overlay before it has a version: what a strategy offers for one parent. */
export interface Proposal {
  mode: PromptOverlay['mode'];
  template: string;
  /** One line for humans (becomes origin.note). */
  note: string;
}

/** A beam member: version 0 with overlay null is the agent's own prompt. */
export interface ParentPrompt {
  version: number;
  overlay: PromptOverlay | null;
}

/** Which parent and strategy a version to allocate is for. */
export interface ChildPlan {
  version: number;
  parentVersion: number;
  strategy: ProposalStrategy;
  /** 0-based position among the versions of this call: seeds the child's choices. */
  childIndex: number;
  /** 0-based position among the children of the same parent. */
  siblingIndex: number;
}

/**
 * Versions go to parents in order, in equal blocks (the first parents take the remainder), and a parent's children
 * alternate through the strategies: with branchFactor 2 and both strategies, each parent gets one child of each.
 */
export function planChildren(
  parents: readonly ParentPrompt[],
  versions: readonly number[],
  strategies: readonly ProposalStrategy[],
): ChildPlan[] {
  if (parents.length === 0 || strategies.length === 0) return [];
  const base = Math.floor(versions.length / parents.length);
  const extra = versions.length % parents.length;
  const plans: ChildPlan[] = [];
  let next = 0;
  parents.forEach((parent, p) => {
    const count = base + (p < extra ? 1 : 0);
    for (let s = 0; s < count; s++, next++) {
      plans.push({
        version: versions[next]!,
        parentVersion: parent.version,
        strategy: strategies[s % strategies.length]!,
        childIndex: next,
        siblingIndex: s,
      });
    }
  });
  return plans;
}
