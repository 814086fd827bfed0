import { downStack } from '../../stack/local-stack.js';
import type { Command } from '../command.js';

export const downCommand: Command = {
  name: 'down',
  summary: 'stop the processes `volt up` started, worker first (data is kept)',
  help: 'Stops exactly the PIDs recorded in $VOLT_DATA_DIR/run/ in reverse start order (SIGTERM, then SIGKILL after 10 s),\nafter checking each PID still runs our command line. Nothing under $VOLT_DATA_DIR is deleted.',
  options: {},
  async run(ctx) {
    for (const r of await downStack(ctx.env())) {
      ctx.out(`${r.name.padEnd(13)} ${r.stopped ? `stopped (pid ${r.pid})` : 'was not running'}`);
    }
    return 0;
  },
};
