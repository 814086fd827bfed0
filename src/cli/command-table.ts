import type { Command } from './command.js';
import { downCommand } from './commands/down.js';
import { statusCommand } from './commands/status.js';
import { smokeCommand } from './commands/smoke.js';
import { upCommand } from './commands/up.js';

/** Every `volt` subcommand, in the order `volt --help` lists them. Add new commands here. */
export const commands: readonly Command[] = [upCommand, downCommand, statusCommand, smokeCommand];
