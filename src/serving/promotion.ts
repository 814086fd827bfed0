import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import { samePolicy, separatelyTrained } from '../contracts/policy-set.js';
import { claimDeployAlias, listDeployAliases, moveDeployAlias } from '../lineage/deploy-alias.js';
import { setLineageCurrent } from '../lineage/lineage-record.js';
import { bestAliasName, readRunAlias, writeAlias } from './run-alias.js';
import { servePolicy, type ServingDeps } from './serve-policy.js';

/** Where the run's `best` moves: a promoted policy (with its iteration) or the base model (iteration null). */
export interface AliasTarget {
  policy: PolicyRef;
  score: number;
  iteration: number | null;
}

/**
 * Promotion or rollback: the run's `best` alias moves to `to` and the server serves it as `<run>-best` (the base model
 * is served under its own name, so `<run>-best` is unloaded), a team's role adapters as `<run>-best-<role>`; then the
 * lineage moves. Idempotent: a retry after the
 * alias was written only reloads (or unloads) the adapter.
 */
export async function moveBest(deps: ServingDeps, config: RunConfig, to: AliasTarget): Promise<void> {
  const existing = await readRunAlias(deps.store, config.runId);
  if (!existing || !samePolicy(existing.current.policy, to.policy) || existing.current.iteration !== to.iteration)
    await writeAlias(deps.store, config.runId, {
      policy: to.policy,
      score: to.score,
      iteration: to.iteration,
      at: new Date().toISOString(),
    });
  const best = bestAliasName(config.runId);
  if (to.policy.sha256) await servePolicy(deps, to.policy, best);
  else await deps.server.unloadAdapter(best);
  // A team's trained roles: each served as `<run>-best-<role>` (the base model has no alias to serve).
  for (const role of separatelyTrained(config.team) ?? []) {
    const p = to.policy.roles?.[role];
    if (p?.sha256) await servePolicy(deps, p, `${best}-${role}`);
    else await deps.server.unloadAdapter(`${best}-${role}`);
  }
  // The run's validator refuses a rollback to the bare base model when a deploy alias would have nothing to serve.
  await moveLineage(deps, config, to.policy, to.score);
}

/**
 * A lineage's promotion or rollback: its record's current policy moves, then its deploy alias (record first, so a
 * restarted model server loads what was decided), then the model server repoints the alias in one step.
 * Throws DeployAliasError when another lineage owns the alias.
 */
async function moveLineage(deps: ServingDeps, config: RunConfig, policy: PolicyRef, score: number): Promise<void> {
  if (!config.lineage) return;
  const { deploy, lineage } = config;
  // Another lineage's alias is refused before anything moves (planRun claimed it; this catches a simultaneous claim).
  if (deploy) await claimDeployAlias(deps.store, deploy.alias, lineage);
  await setLineageCurrent(deps.store, lineage, { policy, score, runId: config.runId });
  if (deploy) {
    await moveDeployAlias(deps.store, deploy.alias, lineage, policy, config.runId);
    await servePolicy(deps, policy, deploy.alias);
  }
}

/** Load every stored deploy alias into the model server (`volt serve` at start): a restarted server serves them again. */
export async function syncDeployAliases(deps: ServingDeps): Promise<string[]> {
  const aliases = await listDeployAliases(deps.store);
  const served = aliases.flatMap((a) =>
    a.current?.policy.sha256 ? [{ alias: a.alias, policy: a.current.policy }] : [],
  );
  for (const a of served) await servePolicy(deps, a.policy, a.alias);
  return served.map((a) => `${a.alias} → ${a.policy.name}`);
}
