// Starts up to VOLT_TASK.input.forkAttempts `sleep` children and writes how many it got, and the error that stopped it.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const { input } = JSON.parse(process.env.VOLT_TASK);
const children = [];
let error = null;
for (let i = 0; i < input.forkAttempts && !error; i++) {
  await new Promise((resolve) => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    child.once('spawn', () => (children.push(child), resolve()));
    child.once('error', (e) => ((error = e.code ?? e.message), resolve()));
  });
}
writeFileSync(process.env.VOLT_OUTPUT_FILE, JSON.stringify({ children: children.length, error }));
for (const c of children) c.kill('SIGKILL');
