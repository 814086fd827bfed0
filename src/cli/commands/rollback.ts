import { policyLabel } from '../../contracts/policy-set.js';
import { connectClient } from '../../client/connect.js';
import { rollbackRun } from '../../client/runs.js';
import type { RollbackRequest } from '../../workflows/definitions.js';
import { UsageError, type Command } from '../command.js';

/** `--to base | previous | <iteration>` as the update's request. */
export function parseRollbackTarget(value: string | undefined): RollbackRequest {
  if (value === undefined || value === 'previous') return { to: 'previous' };
  if (value === 'base') return { to: 'base' };
  if (/^\d+$/.test(value)) return { to: Number(value) };
  throw new UsageError(`--to expects base, previous or the iteration of a promotion, got ${JSON.stringify(value)}`);
}

export const rollbackCommand: Command = {
  name: 'rollback',
  summary: "move a running run's best checkpoint back to an earlier promotion or the base model (update `rollback`)",
  help: [
    'usage: volt rollback <runId> [--to previous|base|<iteration>]',
    'The run workflow owns "best": it moves the `best` alias, reloads the model server, and compares the next candidate',
    'against the rolled-back score. Same as:',
    '  temporal workflow update execute --workflow-id <runId> --name rollback --input \'{"to": "base"}\'',
  ].join('\n'),
  options: { to: { type: 'string' } },
  async run(ctx) {
    const runId = ctx.positionals[0];
    if (!runId) throw new UsageError('missing the run id');
    const request = parseRollbackTarget(ctx.values.to as string | undefined);
    const { client, close } = await connectClient(ctx.env());
    try {
      const { best, iteration } = await rollbackRun(client, runId, request);
      ctx.out(
        `${runId}: best is now ${policyLabel(best.policy)} (${iteration === null ? 'base model' : `promoted at iteration ${iteration}`}, score ${best.score.toFixed(3)})`,
      );
      return 0;
    } finally {
      await close();
    }
  },
};
