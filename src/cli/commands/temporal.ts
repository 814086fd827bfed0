import { Connection } from '@temporalio/client';
import { setupTemporal } from '../../client/temporal-setup.js';
import { loadTemporalConfig } from '../../stack/temporal-config.js';
import { UsageError, type Command } from '../command.js';
import { parseDuration } from '../duration.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export const temporalCommand: Command = {
  name: 'temporal',
  summary: "prepare a Temporal server for Volt: setup registers the namespace and Volt's search attributes",
  help: [
    'usage: volt temporal setup [--address HOST:PORT] [--namespace NS] [--retention 3d]',
    'Registers the namespace (when missing, with --retention, default 3 days) and the search attributes of',
    'temporal-config/search-attributes.json (VoltRunId, VoltIteration, VoltPhase, VoltBestScore, VoltLineage) on the',
    'Temporal server at --address (default VOLT_TEMPORAL_ADDRESS), in --namespace (default VOLT_TEMPORAL_NAMESPACE).',
    'Idempotent: run it once per server and namespace before the first worker starts (`volt up` passes the same',
    'attributes to its dev server as flags). Workers, `volt train` and `--follow` must all use this VOLT_TEMPORAL_NAMESPACE.',
    'Temporal CLI equivalent: temporal operator namespace create --namespace NS --retention 72h, then',
    '  temporal operator search-attribute create --namespace NS --name VoltRunId --type Keyword (and so on).',
  ].join('\n'),
  options: { address: { type: 'string' }, namespace: { type: 'string' }, retention: { type: 'string' } },
  async run(ctx) {
    if (ctx.positionals[0] !== 'setup' || ctx.positionals.length !== 1)
      throw new UsageError(`unknown temporal action ${JSON.stringify(ctx.positionals.join(' '))} (expected setup)`);
    const env = ctx.env();
    const address = str(ctx.values.address) ?? env.VOLT_TEMPORAL_ADDRESS;
    const namespace = str(ctx.values.namespace) ?? env.VOLT_TEMPORAL_NAMESPACE;
    const retentionMs = parseDuration('--retention', str(ctx.values.retention) ?? '3d');
    const connection = await Connection.connect({ address });
    try {
      const done = await setupTemporal(connection, {
        namespace,
        retentionMs,
        searchAttributes: loadTemporalConfig().searchAttributes,
      });
      ctx.out(`namespace ${namespace} on ${address}: ${done.namespaceCreated ? 'registered' : 'already there'}`);
      ctx.out(`search attributes added: ${done.added.join(', ') || 'none'}`);
      ctx.out(`search attributes already there: ${done.present.join(', ') || 'none'}`);
      return 0;
    } finally {
      await connection.close();
    }
  },
};
