import net from 'node:net';

/** A port the stack needs is already taken; the message names the port and the variable that moves it. */
export class PortInUseError extends Error {
  constructor(
    readonly service: string,
    readonly host: string,
    readonly port: number,
    readonly envVar: string,
  ) {
    super(
      `${service}: port ${port} on ${host} is already in use; stop whatever holds it or set ${envVar} to a free port`,
    );
    this.name = 'PortInUseError';
  }
}

/** True when nothing listens on host:port (we can bind it ourselves, then release it). */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') resolve(false);
      else reject(err);
    });
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export async function assertPortFree(service: string, host: string, port: number, envVar: string): Promise<void> {
  if (!(await isPortFree(host, port))) throw new PortInUseError(service, host, port, envVar);
}

/** A port the kernel just considered free on host; racy by nature, callers still check before binding. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not read the bound port'))));
    });
  });
}

/** Parse "host:port" as used by VOLT_TEMPORAL_ADDRESS. */
export function splitHostPort(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  const port = Number(address.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`expected host:port, got ${JSON.stringify(address)}`);
  return { host: address.slice(0, at), port };
}

/** Servers bind to loopback only; "localhost" means 127.0.0.1 so the port check and the bind agree. */
export function loopbackHost(host: string, envVar: string): string {
  if (host === 'localhost' || host === '127.0.0.1') return '127.0.0.1';
  throw new Error(`${envVar}: the local stack binds to 127.0.0.1 only, got host ${JSON.stringify(host)}`);
}
