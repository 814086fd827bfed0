import { runDashboard } from '../../dashboard/server.js';
import type { Command } from '../command.js';

export const dashboardCommand: Command = {
  name: 'dashboard',
  summary: 'serve the read-only web dashboard of runs, iterations, rollouts and spans on VOLT_DASHBOARD_URL',
  help: [
    'Reads Temporal (runs, status) and the object store (rewards, batch manifests, spans, logs); writes nothing.',
    'Pages: /  (runs), /runs/<runId>, /runs/<runId>/iterations/<n>, /runs/<runId>/iterations/<n>/rollouts/<rolloutId>.',
    'Listens on VOLT_DASHBOARD_LISTEN_HOST (default 127.0.0.1) at the port of VOLT_DASHBOARD_URL (default 8600);',
    'beyond loopback it refuses to start without VOLT_DASHBOARD_TOKEN, which every request must then carry',
    '(Authorization: Bearer, or ?token= once, which sets a cookie). `volt up` runs it. Stops on SIGTERM.',
  ].join('\n'),
  options: {},
  async run(ctx) {
    const app = await runDashboard(ctx.env());
    ctx.out(`dashboard on ${ctx.env().VOLT_DASHBOARD_URL}`);
    await new Promise<void>((resolve) => app.server.once('close', () => resolve()));
    return 0;
  },
};
