import { spawn } from 'node:child_process';

export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an agent command as a real process with exactly the given env (plus PATH/HOME) and collects its output. */
export function runAgent(
  argv: string[],
  env: Record<string, string>,
  cwd: string,
  timeoutMs = 120_000,
): Promise<AgentRun> {
  return new Promise((resolve, reject) => {
    const [command, ...args] = argv;
    if (!command) return reject(new Error('empty argv'));
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
