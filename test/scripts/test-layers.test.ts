import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { testLayers } from '../../scripts/test-layers.js';

const repoTest = path.resolve(import.meta.dirname, '..');
// The fixtures below are written as the code they stand for; spelled whole here, this file would classify itself.
const starts = (name: string) => `${name}Services`;
const modelServer = ['volt_trainer', 'serve'].join('.');
const cli = ['bin', 'volt.mjs'].join('/');

void describe('test layers (scripts/test-layers.ts)', () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  void it('classifies by the helpers a test calls, following helpers through helpers, not by the modules it imports', async () => {
    const root = path.join(await mkdtemp(path.join(os.tmpdir(), 'volt-layers-')), 'test');
    dirs.push(path.dirname(root));
    const files: Record<string, string> = {
      'helpers/services.ts': `export async function ${starts('startTest')}(want = {}) { return want; }\n`,
      'a/fixtures.ts': [
        `import { ${starts('startTest')} } from '../helpers/services.js';`,
        'export function specFor(cmd: string[]) { return { cmd }; }',
        `export async function startLogStore() { return ${starts('startTest')}({ s3: true }); }`,
        'export const startStoreTwice = async () => [await startLogStore(), await startLogStore()];',
      ].join('\n'),
      'a/pure.test.ts': "import { specFor } from './fixtures.js';\nspecFor(['x']);\n",
      'a/type-only.test.ts':
        "import type { startLogStore } from './fixtures.js';\nimport { type startStoreTwice, specFor } from './fixtures.js';\n",
      'a/store.test.ts': "import { startStoreTwice as twice } from './fixtures.js';\nawait twice();\n",
      'b/model.test.ts': `spawn(python, ['-m', '${modelServer}', '--port', '1']);\n`,
      'b/cli.test.ts': `run(process.execPath, [path.join(root, '${cli}'), 'up']);\n`,
      'b/manifest.test.ts': `assert.deepEqual(command, ['node', '${cli}', 'gateway']);\n`,
    };
    for (const [file, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), text);
    }
    const layers = Object.fromEntries(testLayers(root).map((t) => [t.file, [t.layer, t.reason]]));
    assert.deepEqual(layers, {
      'test/a/pure.test.ts': ['unit', undefined],
      'test/a/type-only.test.ts': ['unit', undefined],
      'test/a/store.test.ts': ['integration', 'a/fixtures.ts starts Temporal/S3 test services'],
      'test/b/cli.test.ts': ['integration', 'b/cli.test.ts starts the volt CLI'],
      'test/b/manifest.test.ts': ['unit', undefined],
      'test/b/model.test.ts': ['integration', 'b/model.test.ts starts the Python model server'],
    });
  });

  void it('puts every test file of the repo in exactly one layer, the service-backed ones in integration', () => {
    const layers = testLayers(repoTest);
    const byFile = new Map(layers.map((t) => [t.file, t.layer]));
    assert.equal(byFile.size, layers.length);
    for (const f of [
      'test/temporal/smoke.test.ts',
      'test/pipeline/durability.test.ts',
      'test/gateway/admin.test.ts',
      'test/rollouts/local-runner.test.ts',
      'test/cli/up-down.test.ts',
    ]) {
      assert.equal(byFile.get(f), 'integration', f);
    }
    for (const f of [
      'test/config/env.test.ts',
      'test/workflows/training-run.test.ts',
      'test/deploy/chart.test.ts',
      'test/replay/replay.test.ts',
      'test/scripts/test-layers.test.ts',
    ]) {
      assert.equal(byFile.get(f), 'unit', f);
    }
  });
});
