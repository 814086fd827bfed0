import { Client, Connection } from '@temporalio/client';
import type { VoltEnv } from '../config/env.js';

/** A Temporal client for the env's server and namespace; close the connection when done. */
export async function connectClient(env: Pick<VoltEnv, 'VOLT_TEMPORAL_ADDRESS' | 'VOLT_TEMPORAL_NAMESPACE'>) {
  const connection = await Connection.connect({ address: env.VOLT_TEMPORAL_ADDRESS });
  return {
    client: new Client({ connection, namespace: env.VOLT_TEMPORAL_NAMESPACE }),
    close: () => connection.close(),
  };
}
