import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/** An upward import from `files` into one of the `above` folders of src/ is an error (and any `more` patterns). */
const layer = (files, above, message, more = []) => [
  {
    files: [files],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ group: above.map((dir) => `**/${dir}/*`), message: `${message}.` }, ...more] },
      ],
    },
  },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.venv/**',
      '.venv-agents/**',
      '.volt/**',
      'dist/**',
      'trainer/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Layering: contracts <- storage <- domain modules <- activities <- workers/CLI; workflows import only types.
  ...layer(
    'src/contracts/**/*.ts',
    [
      'config',
      'storage',
      'tasks',
      'rollouts',
      'rewards',
      'batches',
      'apo',
      'prompts',
      'gateway',
      'report',
      'activities',
      'workflows',
      'workers',
      'cli',
      'client',
      'stack',
      'dashboard',
    ],
    'contracts are the floor: they import nothing else of Volt',
  ),
  ...layer(
    'src/storage/**/*.ts',
    [
      'tasks',
      'rollouts',
      'rewards',
      'batches',
      'apo',
      'prompts',
      'gateway',
      'report',
      'activities',
      'workflows',
      'workers',
      'cli',
      'client',
      'stack',
      'dashboard',
    ],
    'storage stands on contracts (and config) only',
  ),
  ...layer(
    'src/{config,tasks,rollouts,rewards,batches,apo,prompts,gateway,report,lineage,serving,training}/**/*.ts',
    ['activities', 'workers', 'cli', 'stack'],
    'domain modules are below activities, workers and the CLI',
    [
      {
        group: ['@temporalio/activity'],
        message:
          'Domain modules take plain inputs and deps (unit-testable without Temporal): the activity context stays in src/activities.',
      },
    ],
  ),
  ...layer(
    'src/activities/**/*.ts',
    ['workflows', 'workers', 'cli', 'client', 'stack'],
    'activities are below workflows, workers and the CLI',
  ),
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O, types only from activities.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflows must be deterministic: no Node built-ins.' })),
          patterns: [{ group: ['zod'], message: 'Validate at the edges, not inside workflows.' }],
        },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./(?!contracts/failures\\.js$|contracts/policy-set\\.js$|config/run-rules\\.js$)',
              allowTypeImports: true,
              message:
                'Workflows import only types from the rest of Volt (their own folder, the failure table, the plain-data team policies and run-config rules excepted).',
            },
          ],
        },
      ],
    },
  },
);
