import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isPortFree } from '../../src/stack/ports.js';

const taken = new Set<number>();
// Test files run in parallel (scripts/test.sh): a port is claimed by a file here for the test process's whole life, so
// a service stopped and started again on its port never finds it taken by another file's service in between.
const CLAIMS = path.join(os.tmpdir(), 'volt-test-ports');

/** The low end of the kernel's ephemeral range: ports it hands to bind(0) and to outgoing connections. */
function ephemeralLow(): number {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 2_000 ? low : 32_768;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Claim `port` for this process across test processes; a claim left by a dead process is removed (not taken). */
function claim(port: number): boolean {
  mkdirSync(CLAIMS, { recursive: true });
  const file = path.join(CLAIMS, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const owner = Number(readFileSync(file, 'utf8').trim());
    if (owner > 0 && !alive(owner)) unlinkSync(file);
    return false;
  }
  if (taken.size === 0) process.once('exit', releaseClaims);
  return true;
}

function releaseClaims() {
  for (const port of taken) {
    const file = path.join(CLAIMS, String(port));
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
    } catch {
      // already gone
    }
  }
}

/**
 * A free loopback port below the ephemeral range, for a service a test stops and starts again on the same port (as
 * an operator's fixed ports are): a port from bind(0) can be handed, while the service is down, to an outgoing
 * connection or to another server's own bind(0) — the Temporal dev server picks its internal ports that way.
 */
export async function stablePort(host = '127.0.0.1'): Promise<number> {
  const low = Math.max(10_000, ephemeralLow() - 20_000);
  const high = ephemeralLow();
  for (let i = 0; i < 200; i++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (taken.has(port) || !(await isPortFree(host, port)) || !claim(port)) continue;
    taken.add(port);
    return port;
  }
  throw new Error(`no free port in ${low}-${high - 1} on ${host} after 200 tries`);
}
