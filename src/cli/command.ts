import type { ParseArgsConfig } from 'node:util';
import type { VoltEnv } from '../config/env.js';

export type CliOptions = NonNullable<ParseArgsConfig['options']>;

/** What a command gets: its parsed flags, the environment (parsed on first use), and where to print. */
export interface CommandContext {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
  env(): Readonly<VoltEnv>;
  out(line: string): void;
  err(line: string): void;
}

/** One `volt <name>` subcommand; each lives in its own file under src/cli/commands/ and is listed in command-table.ts. */
export interface Command {
  name: string;
  summary: string;
  /** Shown by `volt <name> --help` below the usage line. */
  help: string;
  options: CliOptions;
  /** Resolves to the process exit code. */
  run(ctx: CommandContext): Promise<number>;
}

/** A usage mistake (unknown flag, missing argument): printed with the command's help, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
