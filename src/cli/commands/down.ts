import { downStack } from '../../stack/local-stack.js';
import type { Command } from '../command.js';

export const downCommand: Command = {
  name: 'down',
  summary: 'stop the processes `volt up` started (data is kept)',
  help: 'Stops exactly the PIDs recorded in $VOLT_DATA_DIR/run/ (SIGTERM, then SIGKILL after 10 s), after checking each\nPID still runs our command line. Nothing under $VOLT_DATA_DIR is deleted.',
  options: {},
  async run(ctx) {
    for (const r of await downStack(ctx.env())) {
      ctx.out(`${r.name.padEnd(9)} ${r.stopped ? `stopped (pid ${r.pid})` : 'was not running'}`);
    }
    return 0;
  },
};
