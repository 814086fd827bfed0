import { readFileSync } from 'node:fs';
import { isPortFree } from '../../src/stack/ports.js';

const taken = new Set<number>();

/** The low end of the kernel's ephemeral range: ports it hands to bind(0) and to outgoing connections. */
function ephemeralLow(): number {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 2_000 ? low : 32_768;
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
    if (taken.has(port) || !(await isPortFree(host, port))) continue;
    taken.add(port);
    return port;
  }
  throw new Error(`no free port in ${low}-${high - 1} on ${host} after 200 tries`);
}
