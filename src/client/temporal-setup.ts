import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError, type Connection } from '@temporalio/client';
import type { Timestamp } from '@temporalio/common';
import type { SearchAttributes } from '../stack/temporal-config.js';

/** temporal.api.enums.v1.IndexedValueType, by the names temporal-config/search-attributes.json uses. */
const INDEXED_VALUE_TYPE: Record<SearchAttributes[string], number> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};
const GRPC = { NOT_FOUND: 5, ALREADY_EXISTS: 6 } as const;
const isGrpc = (e: unknown, code: number) => isGrpcServiceError(e) && e.code === code;

export interface TemporalSetup {
  namespaceCreated: boolean;
  /** Search attributes this call added, and those the namespace already had with the right type. */
  added: string[];
  present: string[];
}

/** A search attribute the namespace has with another type: Temporal cannot change it, so setup stops. */
export class SearchAttributeConflictError extends Error {
  constructor(namespace: string, name: string, has: string, wants: string) {
    super(
      `namespace ${namespace} has search attribute ${name} as ${has}, Volt needs ${wants}; rename or remove it first`,
    );
    this.name = 'SearchAttributeConflictError';
  }
}

/**
 * Registers the namespace (when missing) and Volt's search attributes on any Temporal server, as `volt up`'s dev
 * server gets them from its flags. Idempotent: what exists with the right type is left alone. A namespace just
 * registered can take a few seconds to be usable (the servers' namespace cache): NOT_FOUND is retried until `waitMs`.
 */
export async function setupTemporal(
  connection: Connection,
  o: { namespace: string; retentionMs: number; searchAttributes: Readonly<SearchAttributes>; waitMs?: number },
): Promise<TemporalSetup> {
  const { namespace } = o;
  let namespaceCreated = false;
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (e) {
    if (!isGrpc(e, GRPC.NOT_FOUND)) throw e;
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        // protobufjs encodes a plain number into the int64 its types call Long.
        workflowExecutionRetentionPeriod: {
          seconds: Math.ceil(o.retentionMs / 1000) as unknown as Timestamp['seconds'],
        },
      });
      namespaceCreated = true;
    } catch (err) {
      // Another setup registered it in between.
      if (!isGrpc(err, GRPC.ALREADY_EXISTS)) throw err;
    }
  }
  const giveUpAt = Date.now() + (o.waitMs ?? 30_000);
  for (;;) {
    try {
      return { namespaceCreated, ...(await addSearchAttributes(connection, namespace, o.searchAttributes)) };
    } catch (e) {
      if (!isGrpc(e, GRPC.NOT_FOUND) || Date.now() > giveUpAt) throw e;
      await sleep(500);
    }
  }
}

async function addSearchAttributes(
  connection: Connection,
  namespace: string,
  wanted: Readonly<SearchAttributes>,
): Promise<{ added: string[]; present: string[] }> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const typeName = (n: number | null | undefined) =>
    Object.entries(INDEXED_VALUE_TYPE).find(([, v]) => v === n)?.[0] ?? `type ${n}`;
  const missing: Record<string, number> = {};
  const present: string[] = [];
  for (const [name, type] of Object.entries(wanted)) {
    const has = customAttributes?.[name];
    if (has === undefined || has === null) missing[name] = INDEXED_VALUE_TYPE[type];
    else if (has !== INDEXED_VALUE_TYPE[type])
      throw new SearchAttributeConflictError(namespace, name, typeName(has), type);
    else present.push(name);
  }
  if (Object.keys(missing).length) {
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
    } catch (e) {
      // Another setup added them in between; the next pass checks their types.
      if (!isGrpc(e, GRPC.ALREADY_EXISTS)) throw e;
      return addSearchAttributes(connection, namespace, wanted);
    }
  }
  return { added: Object.keys(missing), present };
}
