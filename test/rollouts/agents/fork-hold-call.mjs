// Holds every process it can get (`sleep` children, up to VOLT_TASK.input.forkAttempts) and, while holding them,
// opens new connections to its gateway (GET <OPENAI_BASE_URL>/models, one fresh connection each, so the sandbox's
// forwarder must fork for each). Writes {children, error, calls: [status or error]}.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';

const { input } = JSON.parse(process.env.VOLT_TASK);
const url = `${process.env.OPENAI_BASE_URL}/models`;

/** One GET on a connection of its own (agent: false), closed after it: resolves to the status or the error code. */
const get = () =>
  new Promise((resolve) => {
    const req = http.get(
      url,
      { agent: false, headers: { authorization: `Bearer ${process.env.OPENAI_API_KEY}` }, timeout: 20_000 },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode));
      },
    );
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', (e) => resolve(e.code ?? e.message));
  });

// Before the bomb: node's own threads (libuv's pool) exist, so the calls below need no new pid in the agent itself.
await stat('.');
const before = await get();
const children = [];
let error = null;
for (let i = 0; i < input.forkAttempts && !error; i++) {
  await new Promise((resolve) => {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    child.once('spawn', () => (children.push(child), resolve()));
    child.once('error', (e) => ((error = e.code ?? e.message), resolve()));
  });
}
const calls = [];
for (let i = 0; i < 3; i++) calls.push(await get());
writeFileSync(process.env.VOLT_OUTPUT_FILE, JSON.stringify({ before, children: children.length, error, calls }));
for (const c of children) c.kill('SIGKILL');
