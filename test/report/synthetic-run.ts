import type { Span } from '../../src/contracts/span.js';
import type { IterationSummary, RunStatus } from '../../src/workflows/types.js';
import type { RewardsFile } from '../../src/contracts/rewards.js';
import type { ModelAlias, PolicyRef } from '../../src/contracts/policy.js';

/** A small two-iteration run, written by hand: what the pipeline would have left in Temporal and the store. */
export const RUN_ID = 'report-run';
export const XSS = '<script>alert("pwned")</script>';

const sha = (c: string) => c.repeat(64);
export const candidate = (iteration: number, c: string): PolicyRef => ({
  name: `${RUN_ID}-it${iteration}`,
  checkpointKey: `checkpoints/${sha(c)}/`,
  sha256: sha(c),
  iteration,
});

const iter = (iteration: number, o: Partial<IterationSummary>): IterationSummary => ({
  iteration,
  rollouts: 4,
  infraFailed: 0,
  meanReward: 0,
  samples: 4,
  tokens: 400,
  candidate: null,
  evalScore: null,
  eval: null,
  evalError: null,
  promoted: false,
  trainMetrics: null,
  dynamicSampling: null,
  timeline: { seconds: {}, endedAt: '2026-01-01T00:00:00.000Z' },
  ...o,
});

export const history: IterationSummary[] = [
  iter(0, {
    meanReward: 0.3,
    candidate: candidate(0, 'a'),
    evalScore: 0.5,
    promoted: true,
    trainMetrics: { loss: 0.1234, kl: 0.0012, steps: 1 },
  }),
  iter(1, {
    meanReward: 0.55,
    infraFailed: 1,
    samples: 2,
    tokens: 210,
    candidate: candidate(1, 'b'),
    evalScore: 0.375,
    eval: { rewardSum: 3, scored: 8, tasks: 8 },
    trainMetrics: { loss: -0.05, kl: 0.004 },
  }),
];

export const status: RunStatus = {
  runId: RUN_ID,
  iteration: 2,
  iterations: 2,
  phase: 'done',
  paused: false,
  policy: candidate(1, 'b'),
  best: { policy: candidate(0, 'a'), score: 0.5 },
  baseEval: null,
  meanRewards: history.map((h) => h.meanReward),
  evalScores: history.map((h) => h.evalScore),
  history,
  sandbox: 'bubblewrap',
};

export const baseEval: RewardsFile = {
  mode: 'eval',
  label: 'base',
  meanReward: 0.25,
  scored: 4,
  infraFailed: 0,
  rollouts: [],
};

const scored = (rolloutId: string, reward: number | null): RewardsFile['rollouts'][number] => ({
  rolloutId,
  attempt: rolloutId === 'g0-r1' ? 1 : 0,
  taskId: `task-${rolloutId}`,
  taskKind: null,
  groupId: rolloutId.slice(0, 2),
  outcome: reward === null ? 'infra_failed' : 'succeeded',
  reward,
  parts: {},
  flags: [],
  error: null,
});

export const lastRewards: RewardsFile = {
  mode: 'train',
  label: 'train',
  meanReward: 0.55,
  scored: 3,
  infraFailed: 1,
  rollouts: [scored('g0-r0', 0.2), scored('g0-r1', 0.9), scored('g1-r0', null), scored('g1-r1', 0.55)],
};

export const alias: ModelAlias = {
  alias: 'best',
  servedAs: `${RUN_ID}-best`,
  history: [],
  current: { policy: candidate(0, 'a'), score: 0.5, iteration: 0, at: '2026-11-30T10:20:00.000Z' },
};

/** One recorded chat call of rollout `rolloutId` (attempt as in lastRewards). */
export function span(
  rolloutId: string,
  seq: number,
  messages: { role: string; content: string }[],
  answer: string,
): Span {
  return {
    spanId: `${rolloutId}-${seq}`,
    runId: RUN_ID,
    iteration: 1,
    rolloutId,
    attempt: rolloutId === 'g0-r1' ? 1 : 0,
    seq,
    mode: 'train',
    endpoint: 'chat.completions',
    api: 'chat.completions',
    stream: false,
    startedAt: '2026-11-30T10:30:00.000Z',
    firstByteAt: null,
    endedAt: '2026-11-30T10:30:01.000Z',
    durationMs: 1000,
    request: { body: { model: 'x', messages }, headers: {} },
    requestedModel: 'x',
    callKind: 'text',
    role: null,
    upstreamRequest: {},
    response: {},
    promptTokenIds: [1, 2, 3],
    choices: [{ index: 0, tokenIds: [5, 6], logprobs: [-0.1, -0.2], text: answer, finishReason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    servedBy: { model: `${RUN_ID}-it0`, version: sha('a').slice(0, 12) },
    promptOverlay: null,
    translation: [],
    tokens: 'engine',
    status: 'ok',
    error: null,
  };
}

const question = [
  { role: 'system', content: 'You are a calculator.' },
  { role: 'user', content: `What is 6*7? ${XSS}` },
];
/** The best rollout made two calls (the second resends the first); the worst made one. */
export const spans: Span[] = [
  span('g0-r1', 0, question, 'Let me compute: CALC 6*7'),
  span(
    'g0-r1',
    1,
    [...question, { role: 'assistant', content: 'Let me compute: CALC 6*7' }, { role: 'tool', content: '42' }],
    'ANSWER: 42',
  ),
  span('g0-r0', 0, question, 'ANSWER: 41 & <b>bold</b>'),
];
