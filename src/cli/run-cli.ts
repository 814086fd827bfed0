import { parseArgs } from 'node:util';
import { loadInstallationEnv, type VoltEnv } from '../config/env.js';
import { ConfigError } from '../config/errors.js';
import { UsageError, type Command } from './command.js';
import { commands } from './command-table.js';

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
}

const defaultIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
};

function globalHelp(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'usage: volt <command> [options]',
    '',
    'commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `volt <command> --help` for its options. Settings come from VOLT_* environment variables (see docs/operations.md#environment).',
  ].join('\n');
}

function commandHelp(c: Command): string {
  const flags = Object.entries(c.options).map(([name, o]) => `  --${name}${o.type === 'string' ? ' <value>' : ''}`);
  return [`usage: volt ${c.name} [options]`, '', c.summary, '', c.help, '', 'options:', ...flags, '  -h, --help'].join(
    '\n',
  );
}

/** Dispatches argv (without node and script) to a command; resolves to the exit code, never throws. */
export async function runCli(argv: string[], io: CliIo = defaultIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(globalHelp());
    return name === undefined ? 2 : 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.err(`volt: unknown command ${JSON.stringify(name)}\n\n${globalHelp()}`);
    return 2;
  }
  try {
    const { values, positionals } = parseArgs({
      args: rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      io.out(commandHelp(command));
      return 0;
    }
    let env: Readonly<VoltEnv> | undefined;
    return await command.run({
      values,
      positionals,
      env: () => (env ??= loadInstallationEnv(io.env)),
      out: io.out,
      err: io.err,
    });
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    io.err(`volt ${name}: ${(err as Error).message}`);
    if (usage) io.err(`\n${commandHelp(command)}`);
    return usage || err instanceof ConfigError ? 2 : 1;
  }
}
