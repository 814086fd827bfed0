import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The sandbox's only way out: a unix socket (bound into each sandbox) whose every connection is piped to the
 * gateway's TCP address. One socket per gateway address serves every attempt of the runner; the agent still
 * needs its own rollout token to be served anything.
 */
export class GatewayForwarders {
  private dir: Promise<string> | null = null;
  private readonly servers = new Map<string, Promise<{ server: Server; socket: string }>>();

  /** The socket path that forwards to host:port, listening once this resolves. */
  socketFor(host: string, port: number): Promise<string> {
    const id = `${host}:${port}`;
    let entry = this.servers.get(id);
    if (!entry) {
      entry = this.listen(host, port, this.servers.size);
      this.servers.set(id, entry);
      entry.catch(() => this.servers.delete(id));
    }
    return entry.then((e) => e.socket);
  }

  async close(): Promise<void> {
    const entries = await Promise.allSettled(this.servers.values());
    this.servers.clear();
    await Promise.all(
      entries.map((e) => (e.status === 'fulfilled' ? new Promise((r) => e.value.server.close(r)) : null)),
    );
    if (this.dir) await rm(await this.dir, { recursive: true, force: true });
    this.dir = null;
  }

  private async listen(host: string, port: number, n: number): Promise<{ server: Server; socket: string }> {
    // A short private dir: unix socket paths are limited to 108 bytes, attempt dirs can be longer.
    this.dir ??= mkdtemp(path.join(tmpdir(), 'volt-gw-')).then(async (d) => {
      // bwrap resolves the socket as the sandbox uid: it may traverse the dir, not list it.
      await chmod(d, 0o711);
      return d;
    });
    const socket = path.join(await this.dir, `gw-${n}.sock`);
    const server = createServer((inbound) => pipeTo(inbound, host, port));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socket, () => resolve());
    });
    // The sandboxed agent runs as another uid; any local user could reach the gateway's TCP port anyway.
    await chmod(socket, 0o666);
    server.unref();
    return { server, socket };
  }
}

function pipeTo(inbound: Socket, host: string, port: number): void {
  const outbound = createConnection({ host, port });
  outbound.setNoDelay(true);
  inbound.pipe(outbound).pipe(inbound);
  const end = () => {
    inbound.destroy();
    outbound.destroy();
  };
  inbound.on('error', end).on('close', end);
  outbound.on('error', end).on('close', end);
}
