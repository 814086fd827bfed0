import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { parseRunConfig } from '../../src/config/run.js';
import { batchManifestSchema } from '../../src/contracts/batch-manifest.js';
import { modelAliasSchema } from '../../src/contracts/policy.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { iterationSpans, root, startPipelineStack, tinyRunConfig, trainToEnd, type PipelineStack } from './harness.js';

// A team training an adapter per role, end to end on real parts (Temporal, S3, the model server, gateway, workers and
// the unmodified examples/team agent on the openai SDK): each trained role gets its own batch of its own calls, its
// own update and adapter, the evaluation serves each role by its adapter, and promotion serves each as <run>-best-<role>.
const RUN = 'team-two-policies';

describe('a team with two trained roles: an adapter, batch and update per role', { timeout: 1_800_000 }, () => {
  let stack: PipelineStack;
  let worker: ChildProcess;
  before(async () => {
    stack = await startPipelineStack();
    await stack.startGateway();
    worker = await stack.startWorker('all');
  });
  after(async () => {
    worker?.kill('SIGKILL');
    await stack?.stop();
  });

  it('trains the solver and the checker each on its own calls, and evaluates the team with both', async () => {
    const config = parseRunConfig(
      tinyRunConfig(RUN, {
        agent: {
          command: [process.execPath, path.join(root, 'examples/team/agent.mjs')],
          envAllowList: ['PATH', 'HOME'],
          env: { AGENT_TEMPERATURE: '1.0' },
          timeoutSec: 120,
        },
        tasks: {
          trainFile: path.join(root, 'examples/arithmetic/tasks/train.jsonl'),
          evalFile: path.join(root, 'examples/arithmetic/tasks/eval.jsonl'),
        },
        team: {
          roles: [
            { name: 'solver', match: { model: 'solver' }, policy: 'trained' },
            { name: 'checker', match: { model: 'checker' }, policy: 'trained' },
          ],
          unmatched: 'refuse',
        },
        // The completion-token penalty makes rewards differ within a group, so both roles get samples.
        rollouts: { groupSize: 4, tasksPerIteration: 2, concurrency: 4 },
        eval: { tasks: 4, everyIterations: 1, promoteMargin: -1 },
      }),
    );
    const status = await trainToEnd(stack.env, config);
    const it0 = status.history[0]!;
    const seen = `history ${JSON.stringify(it0)}`;
    assert.equal(status.phase, 'done', seen);
    assert.equal(it0.infraFailed, 0, seen);

    // One batch per role, each holding only that role's calls (the other role's are excluded_role drops).
    const store = createObjectStore(stack.env);
    const manifests = await Promise.all(
      ['solver', 'checker'].map((role) => store.getJson(keys.batchManifest(RUN, 0, role), batchManifestSchema)),
    );
    for (const m of manifests) {
      assert.ok(m.counts.samples > 0, `every role trained on samples: ${JSON.stringify(m.counts)}`);
      assert.ok(
        (m.drops.spans.excluded_role ?? 0) > 0,
        `the other role's calls were left out: ${JSON.stringify(m.drops)}`,
      );
    }
    assert.equal(await store.getJsonOrNull(keys.batchManifest(RUN, 0), batchManifestSchema), null, 'no shared batch');

    // Two updates, two adapters, named after their roles; the team candidate carries both.
    const roles = it0.roles!;
    assert.deepEqual(Object.keys(roles), ['solver', 'checker'], seen);
    assert.equal(roles.solver!.samples, manifests[0]!.counts.samples);
    assert.equal(roles.checker!.samples, manifests[1]!.counts.samples);
    const solver = roles.solver!.candidate!;
    const checker = roles.checker!.candidate!;
    assert.match(solver.name, new RegExp(`^${RUN}-solver-[0-9a-f]{12}$`));
    assert.match(checker.name, new RegExp(`^${RUN}-checker-[0-9a-f]{12}$`));
    assert.notEqual(solver.sha256, checker.sha256, 'each role has its own adapter');
    assert.deepEqual(it0.candidate!.roles, { solver, checker });
    assert.equal(it0.candidate!.sha256, solver.sha256, "the top-level fields are the first trained role's");

    // The candidate's evaluation served each role's calls by that role's adapter.
    const spans = await iterationSpans(stack.env, RUN, 0);
    const served = (mode: string, role: string) =>
      new Set(spans.filter((s) => s.mode === mode && s.role === role).map((s) => s.servedBy.model));
    assert.deepEqual([...served('train', 'solver')], [config.model.base], 'iteration 0 samples the base for both');
    assert.deepEqual([...served('train', 'checker')], [config.model.base]);
    const evalKeys = spans.filter((s) => s.mode === 'eval').map((s) => s.rolloutId);
    assert.ok(evalKeys.length > 0, 'evaluation spans were stored');
    const candidateEval = (role: string) =>
      new Set(
        spans
          .filter((s) => s.mode === 'eval' && s.role === role && s.rolloutId.startsWith('eval-candidate'))
          .map((s) => s.servedBy.model),
      );
    assert.deepEqual([...candidateEval('solver')], [solver.name]);
    assert.deepEqual([...candidateEval('checker')], [checker.name]);

    // Promoted (margin -1): the alias records both adapters and the model server serves each as <run>-best-<role>.
    assert.equal(it0.promoted, true, seen);
    const alias = await store.getJson(keys.modelAlias(RUN, 'best'), modelAliasSchema);
    assert.deepEqual(alias.current.policy.roles, { solver, checker });
    const models = await request(`${stack.env.VOLT_MODEL_SERVER_URL}/v1/models`);
    const ids = ((await models.body.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    for (const id of [`${RUN}-best`, `${RUN}-best-solver`, `${RUN}-best-checker`])
      assert.ok(ids.includes(id), ids.join(', '));
  });
});
