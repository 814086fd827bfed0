import { stackStatus } from '../../stack/local-stack.js';
import type { Command, CommandContext } from '../command.js';
import { runStatusCommand } from './run-control.js';
import { onlyServices } from './up.js';

/** Runs `volt run-status` with its output collected, so `status --json <runId>` stays one JSON document. */
async function runStatusJson(ctx: CommandContext): Promise<unknown> {
  const lines: string[] = [];
  await runStatusCommand.run({ ...ctx, values: { ...ctx.values, json: true }, out: (line) => lines.push(line) });
  return JSON.parse(lines.join('\n'));
}

export const statusCommand: Command = {
  name: 'status',
  summary:
    "show whether each local service runs and answers, and a run's status (exit 1 when a service does not answer)",
  help: [
    'usage: volt status [<runId>] [--only temporal,s3] [--json]',
    'For each service: running/stopped (our recorded pid alive), pid, address, and whether the address answers (a',
    "service run elsewhere on that address counts). With a run id, also the run's status, as `volt run-status <runId>`.",
  ].join('\n'),
  options: { json: { type: 'boolean', default: false }, only: { type: 'string' } },
  async run(ctx) {
    const services = await stackStatus(ctx.env(), onlyServices(ctx));
    const allUp = services.every((s) => s.answering && s.uiAnswering !== false);
    const runId = ctx.positionals[0];
    if (ctx.values.json) {
      ctx.out(JSON.stringify(runId ? { services, run: await runStatusJson(ctx) } : services));
      return allUp ? 0 : 1;
    }
    for (const s of services) {
      const pid = s.pid === null ? '-' : String(s.pid);
      ctx.out(
        `${s.name.padEnd(13)} ${s.state.padEnd(8)} pid ${pid.padEnd(8)} ${s.address}  ${s.answering ? 'answering' : 'not answering'}`,
      );
      if (s.uiUrl)
        ctx.out(
          `${''.padEnd(13)} web ui   ${''.padEnd(12)} ${s.uiUrl}  ${s.uiAnswering ? 'answering' : 'not answering'}`,
        );
    }
    if (!runId) return allUp ? 0 : 1;
    ctx.out('');
    const code = await runStatusCommand.run(ctx);
    return allUp ? code : Math.max(code, 1);
  },
};
