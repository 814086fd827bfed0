import { Context } from '@temporalio/activity';
import { ApoConfigError } from '../apo/prompt-promotion.js';
import { proposeOverlays, type ProposeOverlaysInput } from '../apo/propose-overlays.js';
import type { ProposedChildren } from '../apo/propose-children.js';
import { FailureType } from '../contracts/failures.js';
import { TaskSetError } from '../contracts/task.js';
import { createPromptOverlayStore } from '../storage/prompt-overlays.js';
import type { ActivityDeps } from './deps.js';
import { failingAs, type FailureRule } from './failure-rules.js';

export type { ProposeOverlaysInput };
export type ProposeOverlaysResult = ProposedChildren;

const rules: FailureRule[] = [
  [ApoConfigError, FailureType.InvalidConfig],
  [TaskSetError, FailureType.InvalidTaskSet],
];

export const createPromptProposalActivities = (deps: Pick<ActivityDeps, 'store' | 'taskSets'>) => {
  const proposing = { ...deps, overlays: createPromptOverlayStore(deps.store) };
  return {
    /** Propose and store this round's children (src/apo/propose-overlays.ts); a retry resumes where it stopped. */
    proposeOverlays: (input: ProposeOverlaysInput): Promise<ProposeOverlaysResult> =>
      failingAs(rules, () =>
        proposeOverlays(input, proposing, (done, total) => Context.current().heartbeat({ done, total })),
      ),
  };
};
