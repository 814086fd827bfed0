import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { policyRefSchema } from '../../src/contracts/policy.js';
import {
  adaptersOf,
  policyLabel,
  rolePolicy,
  samePolicy,
  separatelyTrained,
  teamPolicy,
} from '../../src/contracts/policy-set.js';
import { teamConfigSchema } from '../../src/contracts/team.js';

const base: PolicyRef = { name: 'smollm2', checkpointKey: null, sha256: null, iteration: null };
const adapter = (name: string, hex: string, iteration = 0): PolicyRef => ({
  name,
  checkpointKey: `checkpoints/${hex.repeat(64)}/`,
  sha256: hex.repeat(64),
  iteration,
});

describe('team policies (an adapter per trained role)', () => {
  const solver = adapter('r-solver-aaaaaaaaaaaa', 'a');
  const checker = adapter('r-checker-bbbbbbbbbbbb', 'b');

  void it('puts the first role on top and keeps every role, and survives the stored schema', () => {
    const team = teamPolicy({ checker, solver }, ['solver', 'checker']);
    assert.equal(team.name, solver.name);
    assert.equal(team.sha256, solver.sha256);
    assert.deepEqual(team.roles, { solver, checker });
    assert.deepEqual(policyRefSchema.parse(team), team);
    assert.equal(policyLabel(team), `solver: ${solver.name}, checker: ${checker.name}`);
    assert.equal(policyLabel(solver), solver.name);
  });

  void it("serves a role by its own adapter, or the run's before it has one", () => {
    const team = teamPolicy({ solver: base, checker }, ['solver', 'checker']);
    assert.deepEqual(rolePolicy(team, 'checker'), checker);
    assert.deepEqual(rolePolicy(team, 'solver'), base);
    assert.deepEqual(rolePolicy(solver, 'anything'), solver);
    assert.deepEqual(adaptersOf(team), [checker], 'the base model needs no serving');
    assert.deepEqual(adaptersOf(teamPolicy({ solver, checker }, ['solver', 'checker'])), [solver, checker]);
    assert.deepEqual(adaptersOf(base), []);
  });

  void it('tells policies apart by every role, not only the top-level one', () => {
    const a = teamPolicy({ solver, checker }, ['solver', 'checker']);
    const b = teamPolicy({ solver, checker: adapter('r-checker-cccccccccccc', 'c', 1) }, ['solver', 'checker']);
    assert.ok(samePolicy(a, structuredClone(a)));
    assert.ok(!samePolicy(a, b), 'the checker moved while the solver stayed');
    assert.ok(samePolicy(solver, structuredClone(solver)));
    assert.ok(!samePolicy(solver, checker));
  });

  void it('gives roles adapters of their own only when two or more are trained', () => {
    const roles = (policies: string[]) =>
      teamConfigSchema.parse({
        roles: policies.map((policy, i) => ({ name: `r${i}`, match: { model: `m${i}` }, policy })),
      });
    assert.deepEqual(separatelyTrained(roles(['trained', 'trained', 'base'])), ['r0', 'r1']);
    assert.equal(separatelyTrained(roles(['trained', 'base'])), null);
    assert.equal(separatelyTrained(undefined), null);
  });
});
