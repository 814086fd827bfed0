/* eslint-disable @typescript-eslint/no-explicit-any -- reads the agent's request body defensively */
import { z } from 'zod';
import type { PolicyRef } from './policy.js';
import { rolePolicy } from './policy-set.js';

/**
 * Agent roles (run config `team`): which agent of a team made a call, told from what an unmodified agent already
 * sends, and which policy serves it. The first role whose every given test holds is the call's role.
 */
const regex = (what: string) =>
  z
    .string()
    .min(1)
    .max(1000)
    .refine(
      (s) => {
        try {
          new RegExp(s);
          return true;
        } catch {
          return false;
        }
      },
      { message: `${what} must be a valid regular expression` },
    );

export const roleMatchSchema = z
  .strictObject({
    /** The `model` the agent asks for: an exact name, `*` for any run of characters (e.g. `"planner"`, `"claude-*"`). */
    model: z.string().min(1).max(200).optional(),
    /** A regular expression searched in the call's system (or developer) instructions. */
    system: regex('system').optional(),
    /** A request header the agent sends: present (no `value`), or matching the regular expression `value`. */
    header: z
      .strictObject({
        name: z
          .string()
          .min(1)
          .max(128)
          .regex(/^[A-Za-z0-9-]+$/, 'a header name'),
        value: regex('header.value').optional(),
      })
      .optional(),
  })
  .refine((m) => m.model !== undefined || m.system !== undefined || m.header !== undefined, {
    message: 'a role needs at least one of model, system or header',
  });
export type RoleMatch = z.output<typeof roleMatchSchema>;

/**
 * Who serves a role: `trained` (a policy the run trains: its calls become samples; with several trained roles each has
 * its own adapter),
 * `base` (the base model, frozen), or `{ adapter }` (a fixed adapter the model server already serves, frozen).
 */
export const rolePolicySchema = z.union([
  z.literal('trained'),
  z.literal('base'),
  z.strictObject({ adapter: z.string().min(1).max(256) }),
]);
export type RolePolicy = z.output<typeof rolePolicySchema>;

export const roleNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a role name is 1-64 of [a-z0-9_-], starting with a letter');

export const teamConfigSchema = z
  .strictObject({
    /** The team's agents, tried in order: a call is the first role whose every `match` test holds. */
    roles: z
      .array(
        z.strictObject({
          /** The role's name, recorded on each of its calls' spans (Span.role). */
          name: roleNameSchema,
          /** How its calls are told apart: any of `model`, `system`, `header`; all those given must hold. */
          match: roleMatchSchema,
          /** `"trained"` (its calls become samples; several trained roles get an adapter, batch and update each), `"base"` (the base model, frozen) or `{ "adapter": name }` (a fixed adapter the model server serves, frozen). */
          policy: rolePolicySchema,
        }),
      )
      .min(1)
      .max(16),
    /**
     * A call no role matches: `base` — served by the base model and recorded (role null), never trained (an agent
     * CLI's side calls keep working); `refuse` — answered 400 naming the call's model, so a mis-set match shows at once.
     */
    unmatched: z.enum(['base', 'refuse']).default('base'),
  })
  .superRefine((team, ctx) => {
    const names = team.roles.map((r) => r.name);
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i)
        ctx.addIssue({ code: 'custom', path: ['roles', i, 'name'], message: `role ${n} is named twice` });
    });
    const trained = team.roles.filter((r) => r.policy === 'trained');
    if (trained.length === 0)
      ctx.addIssue({ code: 'custom', path: ['roles'], message: 'at least one role must have policy "trained"' });
  });
export type TeamConfig = z.output<typeof teamConfigSchema>;

/** A role as the gateway gets it at registration: its tests and the model name its calls are sent to. */
export interface RoleRoute {
  name: string;
  match: RoleMatch;
  model: string;
  /** The run's trained policy serves it (a teacher, in a distilled warm start, serves these calls alone). */
  trained: boolean;
}

export const roleRouteSchema = z.strictObject({
  name: roleNameSchema,
  match: roleMatchSchema,
  model: z.string().min(1).max(256),
  trained: z.boolean(),
});

/** What the gateway knows of a request when it picks a role (the body in chat-completions shape, after translation). */
export interface RoleProbe {
  requestedModel: string | null;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

const globRe = (pattern: string) =>
  new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`);

function textOf(content: any): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p: any) => (typeof p === 'string' ? p : typeof p?.text === 'string' ? p.text : '')).join('\n');
  return '';
}

/** The call's system and developer instructions, joined (chat messages; `prompt` for a legacy completion). */
export function systemTextOf(body: any): string {
  if (typeof body !== 'object' || body === null) return '';
  if (Array.isArray(body.messages))
    return body.messages
      .filter((m: any) => m?.role === 'system' || m?.role === 'developer')
      .map((m: any) => textOf(m.content))
      .join('\n');
  return typeof body.prompt === 'string' ? body.prompt : '';
}

/** Whether a call passes every test a role gives. */
export function matchesRole(match: RoleMatch, probe: RoleProbe): boolean {
  if (match.model !== undefined && (probe.requestedModel === null || !globRe(match.model).test(probe.requestedModel)))
    return false;
  if (match.system !== undefined && !new RegExp(match.system).test(systemTextOf(probe.body))) return false;
  if (match.header !== undefined) {
    const raw = probe.headers[match.header.name.toLowerCase()];
    if (raw === undefined) return false;
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (match.header.value !== undefined && !new RegExp(match.header.value).test(value)) return false;
  }
  return true;
}

/** The first role a call matches, or null. */
export const roleOf = <R extends { match: RoleMatch }>(roles: readonly R[], probe: RoleProbe): R | null =>
  roles.find((r) => matchesRole(r.match, probe)) ?? null;

export { trainedRoles } from './policy-set.js';

/** Each role's route for a rollout served by `policy` (each trained role's adapter) over `base` (the base model's name). */
export const roleRoutes = (team: TeamConfig, policy: PolicyRef, base: string): RoleRoute[] =>
  team.roles.map((r) => ({
    name: r.name,
    match: r.match,
    model: r.policy === 'trained' ? rolePolicy(policy, r.name).name : r.policy === 'base' ? base : r.policy.adapter,
    trained: r.policy === 'trained',
  }));
