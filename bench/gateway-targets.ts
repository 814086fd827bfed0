import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Pool } from 'undici';
import { buildApp } from '../src/gateway/app.js';
import { createObjectStore } from '../src/storage/object-store.js';
import { startMockUpstream } from './gateway-mock-upstream.js';
import type { CallSize } from './gateway-sizes.js';

/**
 * One bench target per process (so the load generator never shares an event loop with what it measures):
 *   upstream <port> <tiny|agent|long> | passthrough <port> <upstreamUrl> | portkey <port>
 *   volt <port> <upstreamUrl> <wal|direct> <dataDir> <s3 json> <write|fsync> <upload defer bytes> [replica id]
 */
const [mode, portArg, ...rest] = process.argv.slice(2);
const port = Number(portArg);

if (mode === 'upstream') {
  await startMockUpstream(port, rest[0] as CallSize);
} else if (mode === 'passthrough') {
  // The floor: a bare undici keep-alive proxy that streams bodies both ways and does nothing else.
  const pool = new Pool(rest[0]!, { connections: 128, keepAliveTimeout: 60_000 });
  http
    .createServer((req, res) => {
      pool
        .request({
          method: req.method as 'POST',
          path: req.url!,
          headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
          body: req,
        })
        .then(
          (up) => {
            res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/json') });
            up.body.pipe(res);
          },
          () => res.writeHead(502).end(),
        );
    })
    .listen(port, '127.0.0.1');
  // Exit normally on SIGTERM, so --cpu-prof writes its profile (bench/gateway-profile.ts --target passthrough).
  process.once('SIGTERM', () => process.exit(0));
} else if (mode === 'volt') {
  const [upstreamUrl, durability, dataDir, s3, walSync, deferBytes, replicaId] = rest as [
    string,
    'wal' | 'direct',
    string,
    string,
    'write' | 'fsync',
    string,
    string | undefined,
  ];
  const store = createObjectStore(JSON.parse(s3) as Parameters<typeof createObjectStore>[0]);
  const app = await buildApp({
    store,
    dataDir: path.resolve(dataDir),
    modelServerUrl: upstreamUrl,
    adminKey: 'bench-admin-key',
    durability,
    walSync,
    uploadDeferBytes: Number(deferBytes),
    replicaId,
  });
  app.server.keepAliveTimeout = 60_000;
  await app.listen({ host: '127.0.0.1', port });
  // A clean close on SIGTERM ends the encoder's worker thread, so --cpu-prof writes its profile too.
  process.once('SIGTERM', () => void app.close().finally(() => process.exit(0)));
} else if (mode === 'portkey') {
  // Portkey's server binds every interface; keep it on loopback like everything else here.
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
    if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
    return (listen as (...a: unknown[]) => net.Server).apply(this, args);
  } as typeof listen;
  process.argv.push(`--port=${port}`, '--headless');
  await import(path.resolve('node_modules/@portkey-ai/gateway/build/start-server.js'));
} else {
  console.error(`unknown bench target ${mode}`);
  process.exit(2);
}
console.log(`bench target ${mode} ready on ${port}`);
