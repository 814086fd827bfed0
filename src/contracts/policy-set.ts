import type { PolicyRef } from './policy.js';
import type { TeamConfig } from './team.js';

/**
 * A team's policies (zod-free: workflow code uses these). A run trains one adapter, unless its team has several
 * trained roles: then each trained role has its own adapter, batch and update, and the run's PolicyRef carries them
 * in `roles` (its top-level fields are the first trained role's, so code that serves one policy keeps working).
 */

/** The names of a team's trained roles (the only ones whose calls become samples); null without a team. */
export const trainedRoles = (team: TeamConfig | undefined): string[] | null =>
  team ? team.roles.filter((r) => r.policy === 'trained').map((r) => r.name) : null;

/** The trained roles that get adapters of their own: a team's trained roles when there are two or more, else null. */
export function separatelyTrained(team: TeamConfig | undefined): string[] | null {
  const trained = trainedRoles(team) ?? [];
  return trained.length > 1 ? trained : null;
}

/** The one adapter (or base model) of a policy's top-level fields, without its roles. */
function single({ roles: _roles, ...one }: PolicyRef): PolicyRef {
  return one;
}

/** The policy serving a trained role: its own adapter, or (before it has one, or in a one-policy run) the run's. */
export function rolePolicy(policy: PolicyRef, role: string): PolicyRef {
  return policy.roles?.[role] ?? single(policy);
}

/** Every adapter a policy needs served (the top-level one and each role's), once each; the base model has none. */
export function adaptersOf(policy: PolicyRef): PolicyRef[] {
  const all = [single(policy), ...Object.values(policy.roles ?? {})];
  return all.filter((p, i) => p.sha256 !== null && all.findIndex((q) => q.name === p.name) === i);
}

/** The team policy of `roles` (role → adapter, in the team's order): the first role's fields on top. */
export function teamPolicy(roles: Record<string, PolicyRef>, order: readonly string[]): PolicyRef {
  const first = roles[order[0]!]!;
  return { ...single(first), roles: Object.fromEntries(order.map((r) => [r, single(roles[r]!)])) };
}

/** How a policy reads in details and reports: its name, or `role: name` per role. */
export function policyLabel(policy: PolicyRef): string {
  return policy.roles
    ? Object.entries(policy.roles)
        .map(([role, p]) => `${role}: ${p.name}`)
        .join(', ')
    : policy.name;
}

/** Whether two policies are the same adapters (each role's too). */
export function samePolicy(a: PolicyRef, b: PolicyRef): boolean {
  const roles = new Set([...Object.keys(a.roles ?? {}), ...Object.keys(b.roles ?? {})]);
  return a.sha256 === b.sha256 && [...roles].every((r) => rolePolicy(a, r).sha256 === rolePolicy(b, r).sha256);
}
