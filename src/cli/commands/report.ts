import { buildRunReport } from '../../report/build-report.js';
import { UsageError, type Command } from '../command.js';

export const reportCommand: Command = {
  name: 'report',
  summary: "write a run's report: index.html (summary, per-iteration table, sample rollouts) and curve.png",
  help: 'usage: volt report <runId> [--out DIR]\nWorks while the run is going (query `status`, needs a worker) and after it closed (no worker needed).\nDefault DIR: <VOLT_DATA_DIR>/reports/<runId>/.',
  options: { out: { type: 'string' } },
  async run(ctx) {
    const runId = ctx.positionals[0];
    if (!runId) throw new UsageError('missing the run id');
    if (ctx.positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(ctx.positionals[1])}`);
    const out = ctx.values.out;
    const written = await buildRunReport(ctx.env(), runId, typeof out === 'string' ? out : undefined);
    for (const line of written.headline) ctx.out(line);
    ctx.out(written.html);
    ctx.out(written.png);
    return 0;
  },
};
