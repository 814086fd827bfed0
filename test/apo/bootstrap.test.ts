import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXAMPLES_HEADING, proposeDemonstrations, type DemonstrationInput } from '../../src/apo/bootstrap.js';
import { digestFromSpans, type RolloutDigest } from '../../src/apo/rollout-digest.js';
import type { PromptOverlay } from '../../src/contracts/prompt-overlay.js';
import { calcTask, calculatorRollout } from './calculator-spans.js';

/** Eight solved tasks (reward 1) and two failed ones (reward 0), as digests of calculator rollouts (text cut at stop strings, as served). */
function digests(): RolloutDigest[] {
  return Array.from({ length: 10 }, (_, i) => {
    const a = 10 + i;
    const task = calcTask(`t${i}`, `What is ${a} plus ${i}?`, a + i);
    const solved = i < 8;
    const ref = { runId: 'boot', iteration: 1, rolloutId: `r${i}`, attempt: 0 };
    const spans = calculatorRollout(
      ref,
      task,
      { calc: `${a}+${i}`, result: String(a + i), answer: solved ? String(a + i) : '7' },
      'cut',
    );
    return digestFromSpans(spans, task, { rolloutId: `r${i}`, reward: solved ? 1 : 0 });
  });
}

const base = (over: Partial<DemonstrationInput> = {}): DemonstrationInput => ({
  parent: { version: 0, overlay: null },
  digests: digests(),
  childIndices: [0, 1, 2],
  seed: 7,
  round: 1,
  demonstrations: 3,
  minReward: 1,
  ...over,
});

const exampleQuestions = (template: string) => [...template.matchAll(/^User: (What is .*)$/gm)].map((m) => m[1]!);

function overlay(template: string, mode: PromptOverlay['mode'] = 'replace'): PromptOverlay {
  return {
    runId: 'boot',
    version: 3,
    mode,
    template,
    origin: { strategy: 'manual', parents: [0], round: null, note: '' },
    createdAt: '2026-01-01T00:00:00Z',
  };
}

describe('bootstrapped demonstrations', () => {
  it("appends worked examples from successful rollouts to the agent's own prompt, distinct per child", () => {
    const proposals = proposeDemonstrations(base());
    assert.equal(proposals.length, 3);
    const subsets = proposals.map((p) => exampleQuestions(p.template).sort().join('|'));
    assert.equal(new Set(subsets).size, 3, 'each child has its own set of examples');
    for (const p of proposals) {
      assert.equal(p.mode, 'append');
      assert.ok(p.template.startsWith(EXAMPLES_HEADING));
      assert.ok(!p.template.includes('{{original}}'), 'append keeps the original by itself');
      const qs = exampleQuestions(p.template);
      assert.equal(qs.length, 3);
      // Failed rollouts (t8, t9: "18 plus 8", "19 plus 9") never become examples.
      assert.ok(
        qs.every((q) => !/^What is 1[89] plus/.test(q)),
        qs.join(', '),
      );
      assert.match(p.note, /3 demonstrations from successful rollouts: r\d \(t\d\)/);
    }
  });

  it("renders the worked steps after the task and the final answer, closed as the model wrote them, not the agent's own few-shot example", () => {
    const [p] = proposeDemonstrations(base({ childIndices: [0] }));
    const first = p!.template.split('\n\n')[1]!;
    const m =
      /^Example 1:\nUser: What is (\d+) plus (\d+)\?\nAssistant: <calc>(\d+)\+(\d+)<\/calc>\nUser: Result: (\d+)\nAssistant: <answer>(\d+)<\/answer>$/.exec(
        first,
      );
    assert.ok(m, first);
    assert.equal(m[6], String(Number(m[1]) + Number(m[2])));
    assert.ok(!p!.template.includes('Tom has 3 bags'));
  });

  it('is deterministic in (seed, round, child index) and changes with them', () => {
    assert.deepEqual(proposeDemonstrations(base()), proposeDemonstrations(base()));
    const first = proposeDemonstrations(base({ childIndices: [0] }))[0]!.template;
    const others = [{ seed: 8 }, { round: 2 }, { childIndices: [5] }, { seed: 9 }, { round: 3 }].map(
      (o) => proposeDemonstrations(base(o))[0]!.template,
    );
    assert.ok(
      others.some((t) => t !== first),
      'another seed, round or child draws other examples',
    );
    assert.ok(others.filter((t) => t === first).length <= 2, 'draws are not all the same');
  });

  it("replaces an overlay parent's examples block instead of stacking a second one, keeping its mode and text", () => {
    const [child] = proposeDemonstrations(base({ childIndices: [0] }));
    let parent = overlay(`Be brief.\n{{original}}\n\n${child!.template}`);
    for (let round = 2; round <= 5; round++) {
      const [next] = proposeDemonstrations(
        base({ parent: { version: round, overlay: parent }, round, childIndices: [0] }),
      );
      assert.ok(next, `round ${round} proposes a child`);
      assert.equal(next.mode, 'replace');
      assert.ok(next.template.startsWith('Be brief.\n{{original}}\n\n'), next.template);
      assert.equal(next.template.split(EXAMPLES_HEADING).length, 2, 'exactly one examples block');
      assert.equal(exampleQuestions(next.template).length, 3);
      parent = { ...parent, template: next.template };
    }
  });

  it('keeps text an optimiser wrote after an examples block', () => {
    const [child] = proposeDemonstrations(base({ childIndices: [0] }));
    const parent = overlay(`${child!.template}\n\nAlways answer with a number.`, 'prepend');
    const [next] = proposeDemonstrations(base({ parent: { version: 4, overlay: parent }, childIndices: [1] }));
    assert.equal(next!.mode, 'prepend');
    assert.ok(next!.template.startsWith('Always answer with a number.\n\n' + EXAMPLES_HEADING), next!.template);
  });

  it('offers nothing without successful rollouts, and no more children than distinct example sets', () => {
    const failedOnly = digests().map((d) => ({ ...d, reward: 0 }));
    assert.deepEqual(proposeDemonstrations(base({ digests: failedOnly })), []);
    const two = digests().slice(0, 2);
    // Two successes and three demonstrations per child: one set exists, so one child.
    const proposals = proposeDemonstrations(base({ digests: two, childIndices: [0, 1, 2] }));
    assert.equal(proposals.length, 1);
    assert.equal(exampleQuestions(proposals[0]!.template).length, 2);
  });

  it('uses one example per task even when several rollouts of it succeeded', () => {
    const copies = digests()
      .slice(0, 2)
      .flatMap((d) => [d, { ...d, rolloutId: `${d.rolloutId}-again` }]);
    const [p] = proposeDemonstrations(base({ digests: copies, demonstrations: 4, childIndices: [0] }));
    assert.deepEqual(exampleQuestions(p!.template).sort(), ['What is 10 plus 0?', 'What is 11 plus 1?']);
  });

  /** Solved tasks: `looped` with a <calc> step then the answer, `direct` answered at once (one call). */
  function mixed(looped: number, direct: number): RolloutDigest[] {
    return Array.from({ length: looped + direct }, (_, i) => {
      const task = calcTask(`m${i}`, `What is ${i} plus 20?`, i + 20);
      const ref = { runId: 'boot', iteration: 1, rolloutId: `m${i}`, attempt: 0 };
      const model =
        i < looped ? { calc: `${i}+20`, result: String(i + 20), answer: String(i + 20) } : { answer: String(i + 20) };
      return digestFromSpans(calculatorRollout(ref, task, model, 'cut'), task, { rolloutId: `m${i}`, reward: 1 });
    });
  }
  const usesTool = (template: string, question: string) => template.includes(`User: ${question}\nAssistant: <calc>`);

  it('prefers the rollouts with the most complete agent loop over direct answers, still distinct per child', () => {
    // Three tool loops, five direct answers, two examples per child: the three pairs of loops come first.
    const proposals = proposeDemonstrations(
      base({ digests: mixed(3, 5), demonstrations: 2, childIndices: [0, 1, 2, 3] }),
    );
    assert.equal(proposals.length, 4);
    const sets = proposals.map((p) => exampleQuestions(p.template).sort().join('|'));
    assert.equal(new Set(sets).size, 4, 'each child has its own set of examples');
    const loopsOnly = proposals.filter((p) => exampleQuestions(p.template).every((q) => usesTool(p.template, q)));
    assert.equal(loopsOnly.length, 3, sets.join(' / '));
    assert.ok(
      proposals.slice(0, 3).every((p) => loopsOnly.includes(p)),
      'the first children get the loops',
    );
    // The fourth child, with every pair of loops taken, still leans on them: one loop and one direct answer.
    assert.equal(
      exampleQuestions(proposals[3]!.template).filter((q) => usesTool(proposals[3]!.template, q)).length,
      1,
      proposals[3]!.template,
    );
  });

  it("keeps a task's most complete successful rollout, and is deterministic with ties in the ranking", () => {
    const [loop] = mixed(1, 0);
    const direct = { ...mixed(0, 1)[0]!, taskId: loop!.taskId, task: loop!.task, rolloutId: 'a-direct' };
    const [p] = proposeDemonstrations(base({ digests: [direct, loop!], demonstrations: 1, childIndices: [0] }));
    assert.match(p!.template, /Assistant: <calc>0\+20<\/calc>\nUser: Result: 20\nAssistant: <answer>20<\/answer>/);
    const ties = base({ digests: mixed(6, 0), demonstrations: 2, childIndices: [0, 1, 2] });
    assert.deepEqual(proposeDemonstrations(ties), proposeDemonstrations(ties));
    const firstSets = [1, 2, 3, 4, 5].map((seed) =>
      exampleQuestions(proposeDemonstrations({ ...ties, seed })[0]!.template).join('|'),
    );
    assert.ok(new Set(firstSets).size > 1, 'ties are broken by the seed, not always the same way');
  });
});
