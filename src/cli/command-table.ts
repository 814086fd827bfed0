import type { Command } from './command.js';
import { adapterLoaderCommand } from './commands/adapter-loader.js';
import { dashboardCommand } from './commands/dashboard.js';
import { deployCommand } from './commands/deploy.js';
import { downCommand } from './commands/down.js';
import { gatewayCommand } from './commands/gateway.js';
import { optimizePromptCommand } from './commands/optimize-prompt.js';
import { reportCommand } from './commands/report.js';
import { rollbackCommand } from './commands/rollback.js';
import { cancelCommand, pauseCommand, resumeCommand, runStatusCommand, tuneCommand } from './commands/run-control.js';
import { scheduleCommand } from './commands/schedule.js';
import { serveCommand } from './commands/serve.js';
import { smokeCommand } from './commands/smoke.js';
import { statusCommand } from './commands/status.js';
import { tasksCommand } from './commands/tasks.js';
import { temporalCommand } from './commands/temporal.js';
import { trainCommand } from './commands/train.js';
import { upCommand } from './commands/up.js';
import { workerCommand } from './commands/worker.js';

/** Every `volt` subcommand, in the order `volt --help` lists them. Add new commands here. */
export const commands: readonly Command[] = [
  upCommand,
  downCommand,
  statusCommand,
  serveCommand,
  adapterLoaderCommand,
  gatewayCommand,
  workerCommand,
  trainCommand,
  optimizePromptCommand,
  runStatusCommand,
  pauseCommand,
  resumeCommand,
  cancelCommand,
  tuneCommand,
  scheduleCommand,
  tasksCommand,
  rollbackCommand,
  deployCommand,
  reportCommand,
  dashboardCommand,
  smokeCommand,
  temporalCommand,
];
