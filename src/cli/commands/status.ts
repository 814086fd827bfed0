import { stackStatus } from '../../stack/local-stack.js';
import type { Command } from '../command.js';

export const statusCommand: Command = {
  name: 'status',
  summary: 'show whether each local service runs and answers (exit 1 when something is down)',
  help: 'For each service: running/stopped (our recorded pid alive), pid, address, and whether the address answers.',
  options: { json: { type: 'boolean', default: false } },
  async run(ctx) {
    const services = await stackStatus(ctx.env());
    if (ctx.values.json) ctx.out(JSON.stringify(services));
    else {
      for (const s of services) {
        const pid = s.pid === null ? '-' : String(s.pid);
        ctx.out(`${s.name.padEnd(9)} ${s.state.padEnd(8)} pid ${pid.padEnd(8)} ${s.address}  ${s.answering ? 'answering' : 'not answering'}`);
        if (s.uiUrl) ctx.out(`${''.padEnd(9)} web ui   ${''.padEnd(12)} ${s.uiUrl}  ${s.uiAnswering ? 'answering' : 'not answering'}`);
      }
    }
    const allUp = services.every((s) => s.state === 'running' && s.answering && s.uiAnswering !== false);
    return allUp ? 0 : 1;
  },
};
