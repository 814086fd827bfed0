import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { scoreRollout } from '../../src/rewards/registry.js';
import { rewardSpecSchema } from '../../src/rewards/spec.js';
import { RewardInfraError } from '../../src/rewards/types.js';
import { ctx, makeEvidence } from './make-evidence.js';
import { startScriptedJudge } from './scripted-judge.js';

const task = { id: 'essay-1', input: { prompt: 'Explain GRPO in one sentence.' } };
const evidence = makeEvidence({ lastAssistantMessage: 'GRPO normalises rewards within a group of samples.' });
let judge: Awaited<ReturnType<typeof startScriptedJudge>>;
const spec = () =>
  rewardSpecSchema.parse({
    kind: 'llm_judge',
    baseUrl: judge.baseUrl,
    model: 'judge-model',
    rubric: 'Grade accuracy.',
    apiKeyEnv: 'JUDGE_KEY',
    timeoutMs: 2_000,
  });
const judgeCtx = { ...ctx, env: { JUDGE_KEY: 'sk-judge' } };

void describe('llm_judge reward against a scripted local judge', () => {
  before(async () => {
    judge = await startScriptedJudge();
  });
  after(async () => {
    await judge.close();
  });

  void it('sends rubric, task and answer with the key, and scales the parsed score', async () => {
    judge.steps.push({ content: 'Mostly right but vague.\nSCORE: 7' });
    assert.deepEqual(await scoreRollout(spec(), task, evidence, judgeCtx), {
      value: 0.7,
      parts: { llm_judge: 0.7 },
      flags: [],
    });
    const req = judge.received.at(-1)!;
    assert.equal(req.authorization, 'Bearer sk-judge');
    assert.equal(req.body.model, 'judge-model');
    assert.match(req.body.messages[0]!.content, /^Grade accuracy\./);
    assert.match(req.body.messages[1]!.content, /Explain GRPO[\s\S]*normalises rewards within a group/);
  });

  void it('an unparseable answer is an infra failure, not a zero', async () => {
    judge.steps.push({ content: 'I would rather not grade this.' });
    await assert.rejects(
      scoreRollout(spec(), task, evidence, judgeCtx),
      (e: unknown) => e instanceof RewardInfraError && /unparseable judge answer/.test(e.message),
    );
    judge.steps.push({ content: 'SCORE: 15' });
    await assert.rejects(
      scoreRollout(spec(), task, evidence, judgeCtx),
      RewardInfraError,
      'out of range is not a score',
    );
  });

  void it('HTTP failures, an unreachable judge and a missing key are infra failures', async () => {
    judge.steps.push({ status: 503 });
    await assert.rejects(scoreRollout(spec(), task, evidence, judgeCtx), /judge call failed: HTTP 503/);
    const down = rewardSpecSchema.parse({ ...spec(), baseUrl: 'http://127.0.0.1:9/v1' });
    await assert.rejects(scoreRollout(down, task, evidence, judgeCtx), RewardInfraError);
    await assert.rejects(scoreRollout(spec(), task, evidence, ctx), /env JUDGE_KEY \(llm_judge.apiKeyEnv\) is not set/);
  });

  void it('no answer to grade scores 0 without calling the judge', async () => {
    const before = judge.received.length;
    assert.deepEqual((await scoreRollout(spec(), task, makeEvidence(), judgeCtx)).flags, ['no_answer']);
    assert.equal(judge.received.length, before);
  });
});
