import { ApplicationFailure } from '@temporalio/activity';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  Next,
} from '@temporalio/worker';
import { FailureType } from '../contracts/failures.js';
import { CorruptObjectError } from '../storage/errors.js';

/** A failure of any activity that no retry can fix, mapped to its type in the one failure table. */
export function mapActivityFailure(err: unknown): unknown {
  if (err instanceof CorruptObjectError) {
    // Re-reading the same bytes gives the same answer: fail at once, naming the key and the fields.
    return ApplicationFailure.create({
      type: FailureType.CorruptRecord,
      message: err.message,
      nonRetryable: true,
      details: [{ key: err.key, fields: err.fields }],
      cause: err,
    });
  }
  return err;
}

class FailureMappingInterceptor implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (err) {
      throw mapActivityFailure(err);
    }
  }
}

/** Installed on every Volt worker (src/workers/workers.ts). */
export const failureMappingInterceptors: ActivityInterceptorsFactory[] = [
  () => ({ inbound: new FailureMappingInterceptor() }),
];
