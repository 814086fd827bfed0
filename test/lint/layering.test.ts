import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';

const root = path.resolve(import.meta.dirname, '../..');
const eslint = new ESLint({ cwd: root });

/** The layering messages ESLint gives `code` as if it were the file at `file` (a path that exists, so the type-aware config applies). */
async function layering(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result!.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message);
}

void describe(
  'ESLint keeps the layering: contracts <- storage <- domain <- activities <- workers/CLI; workflows import types',
  { timeout: 120_000 },
  () => {
    void it('rejects upward imports', async () => {
      assert.match(
        (await layering('src/contracts/task.ts', "import { keys } from '../storage/keys.js';\nvoid keys;\n"))[0] ?? '',
        /contracts are the floor/,
      );
      assert.match(
        (
          await layering(
            'src/storage/keys.ts',
            "import { readTaskSet } from '../tasks/task-set.js';\nvoid readTaskSet;\n",
          )
        )[0] ?? '',
        /storage stands on contracts/,
      );
      assert.match(
        (
          await layering(
            'src/rewards/answer.ts',
            "import { createRewardActivities } from '../activities/rewards.js';\nvoid createRewardActivities;\n",
          )
        )[0] ?? '',
        /domain modules are below/,
      );
      assert.match(
        (
          await layering(
            'src/serving/promotion.ts',
            "import { createServingActivities } from '../activities/serving.js';\nvoid createServingActivities;\n",
          )
        )[0] ?? '',
        /domain modules are below/,
      );
      assert.match(
        (
          await layering(
            'src/training/trainer-process.ts',
            "import { Context } from '@temporalio/activity';\nvoid Context;\n",
          )
        )[0] ?? '',
        /Domain modules take plain inputs/,
      );
      assert.match(
        (
          await layering(
            'src/rollouts/run-rollouts.ts',
            "import { Context } from '@temporalio/activity';\nvoid Context;\n",
          )
        )[0] ?? '',
        /Domain modules take plain inputs/,
      );
      assert.match(
        (
          await layering('src/prompts/message-text.ts', "import { keys } from '../activities/config.js';\nvoid keys;\n")
        )[0] ?? '',
        /domain modules are below/,
      );
      assert.match(
        (
          await layering(
            'src/contracts/task.ts',
            "import { modelText } from '../prompts/message-text.js';\nvoid modelText;\n",
          )
        )[0] ?? '',
        /contracts are the floor/,
      );
      assert.match(
        (
          await layering(
            'src/activities/rewards.ts',
            "import { createWorkers } from '../workers/workers.js';\nvoid createWorkers;\n",
          )
        )[0] ?? '',
        /activities are below/,
      );
      assert.match(
        (await layering('src/workflows/sampling.ts', "import { keys } from '../storage/keys.js';\nvoid keys;\n"))[0] ??
          '',
        /Workflows import only types/,
      );
    });

    void it('accepts downward imports and type-only imports into workflows', async () => {
      assert.deepEqual(
        await layering(
          'src/storage/keys.ts',
          "import type { RolloutRef } from '../contracts/rollout.js';\nexport type R = RolloutRef;\n",
        ),
        [],
      );
      assert.deepEqual(
        await layering('src/activities/rewards.ts', "import { keys } from '../storage/keys.js';\nvoid keys;\n"),
        [],
      );
      assert.deepEqual(
        await layering(
          'src/workflows/sampling.ts',
          "import type { RolloutRef } from '../contracts/rollout.js';\nimport { FailureType } from '../contracts/failures.js';\nexport type R = RolloutRef;\nvoid FailureType;\n",
        ),
        [],
      );
    });
  },
);
