import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRunConfig } from '../../src/config/run.js';
import { ConfigError } from '../../src/config/errors.js';
import { roleOf, roleRoutes, systemTextOf, teamConfigSchema, trainedRoles } from '../../src/contracts/team.js';

const roles = teamConfigSchema.parse({
  roles: [
    { name: 'planner', match: { model: 'planner' }, policy: 'base' },
    { name: 'coder', match: { model: 'gpt-*', system: 'You write code' }, policy: 'trained' },
    { name: 'critic', match: { header: { name: 'X-Role' } }, policy: { adapter: 'critic-v3' } },
  ],
}).roles;
const probe = (requestedModel: string | null, system: string | null, headers: Record<string, string> = {}) => ({
  requestedModel,
  headers,
  body: {
    messages: [
      ...(system ? [{ role: 'system', content: [{ type: 'text', text: system }] }] : []),
      { role: 'user', content: 'hi' },
    ],
  },
});

void describe('agent roles (run config team)', () => {
  void it('a call is the first role whose every test holds', () => {
    assert.equal(roleOf(roles, probe('planner', null))?.name, 'planner');
    assert.equal(roleOf(roles, probe('gpt-4o', 'You write code in Python.'))?.name, 'coder');
    // model alone is not enough for coder: its system test fails, and no other role matches
    assert.equal(roleOf(roles, probe('gpt-4o', 'You review.')), null);
    assert.equal(roleOf(roles, probe(null, null, { 'x-role': 'anything' }))?.name, 'critic');
    assert.equal(
      systemTextOf({
        messages: [
          { role: 'developer', content: 'a' },
          { role: 'system', content: 'b' },
        ],
      }),
      'a\nb',
    );
  });

  void it('routes trained roles to the policy, base to the base model, a fixed adapter to itself', () => {
    const team = teamConfigSchema.parse({ roles });
    assert.deepEqual(
      roleRoutes(team, { name: 'policy-7', checkpointKey: null, sha256: null, iteration: null }, 'smollm2').map((r) => [
        r.name,
        r.model,
        r.trained,
      ]),
      [
        ['planner', 'smollm2', false],
        ['coder', 'policy-7', true],
        ['critic', 'critic-v3', false],
      ],
    );
    assert.deepEqual(trainedRoles(team), ['coder']);
    assert.equal(trainedRoles(undefined), null);
    assert.equal(team.unmatched, 'base');
  });

  void it('refuses a bad team naming the field', () => {
    const bad = (team: unknown) => {
      try {
        parseRunConfig({ runId: 'r', agent: { command: ['node', 'a.mjs'] }, reward: { kind: 'numeric_match' }, team });
      } catch (err) {
        assert.ok(err instanceof ConfigError, String(err));
        return err.message;
      }
      assert.fail('accepted');
    };
    assert.match(
      bad({ roles: [{ name: 'a', match: {}, policy: 'trained' }] }),
      /team\.roles\.0\.match.*at least one of model/,
    );
    assert.match(
      bad({ roles: [{ name: 'a', match: { system: '(' }, policy: 'trained' }] }),
      /team\.roles\.0\.match\.system.*valid regular expression/,
    );
    assert.match(
      bad({
        roles: [
          { name: 'a', match: { model: 'x' }, policy: 'trained' },
          { name: 'a', match: { model: 'y' }, policy: 'base' },
        ],
      }),
      /team\.roles\.1\.name.*named twice/,
    );
    assert.match(
      bad({ roles: [{ name: 'a', match: { model: 'x' }, policy: 'base' }] }),
      /team\.roles.*at least one role must have policy "trained"/,
    );
    const two = [
      { name: 'a', match: { model: 'x' }, policy: 'trained' },
      { name: 'b', match: { model: 'y' }, policy: 'trained' },
    ];
    const config = (extra: object) => ({
      runId: 'r',
      agent: { command: ['node', 'a.mjs'] },
      reward: { kind: 'numeric_match' },
      tasks: { trainFile: 't.jsonl', evalFile: 'e.jsonl' },
      team: { roles: two },
      ...extra,
    });
    assert.equal(parseRunConfig(config({})).team?.roles.length, 2, 'two trained roles: an adapter each');
    assert.throws(() => parseRunConfig(config({ lineage: 'nightly' })), /lineage.*keeps one current policy.*a, b/);
    assert.match(bad({ roles: [{ name: 'A b', match: { model: 'x' }, policy: 'trained' }] }), /team\.roles\.0\.name/);
    assert.match(
      bad({ roles: [{ name: 'a', match: { model: 'x' }, policy: 'trained' }], unmatched: 'drop' }),
      /team\.unmatched/,
    );
  });
});
