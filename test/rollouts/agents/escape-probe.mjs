#!/usr/bin/env node
// A hostile agent: tries every way out of its rollout listed in VOLT_TASK, makes its own gateway call with the
// stock OpenAI SDK, and writes what it reached to VOLT_OUTPUT_FILE as { probe: { breached, detail } }.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import OpenAI from 'openai';

const { input } = JSON.parse(process.env.VOLT_TASK);
const report = {};
const record = (name, breached, detail) => (report[name] = { breached, detail: String(detail).slice(0, 200) });

function tryRead(name, file) {
  try {
    record(name, true, readFileSync(file, 'utf8'));
  } catch (e) {
    record(name, false, e.code ?? e.message);
  }
}

const connect = (port) =>
  new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve('connected')));
    socket.once('timeout', () => (socket.destroy(), resolve('timeout')));
    socket.once('error', (e) => resolve(e.code));
  });

tryRead('gatewayRegistry', input.registryFile);
tryRead('otherProcessEnviron', `/proc/${input.otherPid}/environ`);
tryRead('otherWorkdir', input.otherWorkdirFile);
tryRead('homeFile', input.homeFile);
try {
  record('homeListing', readdirSync(input.homeDir).length > 0, readdirSync(input.homeDir).join(','));
} catch (e) {
  record('homeListing', false, e.code);
}
for (const [name, port] of Object.entries(input.ports)) {
  const r = await connect(port);
  record(`connect:${name}`, r === 'connected', r);
}
// The admin API through the agent's own gateway address, without the admin key.
const admin = await fetch(new URL('/admin/pause', process.env.OPENAI_BASE_URL), { method: 'POST' }).catch((e) => ({
  status: e.code ?? 'error',
}));
record('adminApi', admin.status === 200, admin.status);
try {
  writeFileSync(input.outsideFile, 'escaped');
  record('writeOutside', true, input.outsideFile);
} catch (e) {
  record('writeOutside', false, e.code);
}
try {
  writeFileSync(`/tmp/${input.tmpName}`, 'private tmp');
  record('writePrivateTmp', true, 'written');
} catch (e) {
  record('writePrivateTmp', false, e.code);
}

// Fork bomb, bounded so the unsandboxed run of this probe stays harmless: count the children we got.
const children = [];
let forkError = null;
for (let i = 0; i < input.forkAttempts && !forkError; i++) {
  await new Promise((resolve) => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    child.once('spawn', () => (children.push(child), resolve()));
    child.once('error', (e) => ((forkError = e.code ?? e.message), resolve()));
  });
}
record('forkBomb', forkError === null, `${children.length} children, then ${forkError}`);
// Reaped before going on: until then they still count against the attempt's process limit, which (as root, a pids
// cgroup) the sandbox's socat shares, so a call made meanwhile could find no process left to forward it.
await Promise.all(
  children.map(
    (c) =>
      new Promise((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) return resolve();
        c.once('exit', resolve);
        c.kill('SIGKILL');
      }),
  ),
);

const chunks = [];
let allocError = null;
try {
  for (let mb = 0; mb < input.allocMb; mb += 32) chunks.push(Buffer.alloc(32 * 1024 * 1024, 1));
} catch (e) {
  allocError = e.message;
}
record('overAllocate', allocError === null, `${chunks.length * 32} MiB, then ${allocError}`);
chunks.length = 0;

const client = new OpenAI({ maxRetries: 0 });
const completion = await client.chat.completions.create({
  model: 'anything',
  messages: [{ role: 'user', content: 'Say hi.' }],
  max_tokens: 8,
});
record('ownGatewayCall', true, completion.choices[0].message.content);
writeFileSync(process.env.VOLT_OUTPUT_FILE, JSON.stringify(report));
