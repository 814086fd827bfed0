// A two-role agent on the openai npm SDK: a solver proposes an answer, a checker accepts it or sends it back once.
//
// The roles are told apart by the model name each asks for (`solver`, `checker`), as a team's harness names its
// agents; nothing in the code knows about Volt. examples/team/run.json trains the solver's role and serves the
// checker frozen (the base model): only the solver's calls become samples. The final answer (the reply's last number)
// goes to VOLT_OUTPUT_FILE for the reward (numeric_match).
//
// Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t1","input":{"question":"What is 12 + 7?"}}' \
//      node examples/team/agent.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import OpenAI from 'openai';

const SOLVER = {
  system: 'Answer with the final number only.',
  example: [
    { role: 'user', content: 'What is 12 + 7?' },
    { role: 'assistant', content: '12 + 7 = 19' },
  ],
};
const CHECKER_SYSTEM = 'You check arithmetic answers. Reply with yes if the answer is correct, no if it is wrong.';

/** The reply's last number ("59 + 63 = 122" → "122"); empty when it has none. */
const lastNumber = (text) => {
  const numbers = text.replaceAll(',', '').match(/-?\d+(?:\.\d+)?/g);
  return numbers ? numbers[numbers.length - 1] : '';
};

function readTask() {
  const raw = process.env.VOLT_TASK ?? (process.env.VOLT_TASK_FILE && readFileSync(process.env.VOLT_TASK_FILE, 'utf8'));
  if (!raw) throw new Error('no task: set VOLT_TASK or VOLT_TASK_FILE');
  const task = JSON.parse(raw);
  if (typeof task?.input?.question !== 'string' || !task.input.question)
    throw new Error('invalid task: input.question must be a non-empty string');
  return task;
}

async function main() {
  const { question } = readTask().input;
  const client = new OpenAI({ timeout: 120_000 });
  const temperature = Number(process.env.AGENT_TEMPERATURE ?? 1);
  const ask = async (model, messages, maxTokens) => {
    const completion = await client.chat.completions.create({ model, messages, max_tokens: maxTokens, temperature });
    const content = completion.choices[0]?.message.content ?? '';
    console.error(`${model}: ${JSON.stringify(content)}`);
    return content;
  };
  const solver = [{ role: 'system', content: SOLVER.system }, ...SOLVER.example, { role: 'user', content: question }];
  let reply = await ask('solver', solver, 32);
  let answer = lastNumber(reply);
  const verdict = await ask(
    'checker',
    [
      { role: 'system', content: CHECKER_SYSTEM },
      { role: 'user', content: `Question: ${question}\nAnswer: ${answer || '(none)'}\nIs the answer correct?` },
    ],
    8,
  );
  if (!answer || /\bno\b/i.test(verdict)) {
    // Sent back once: the solver sees its first answer and the checker's verdict in the same conversation.
    solver.push({ role: 'assistant', content: reply });
    solver.push({ role: 'user', content: 'A checker says that is wrong. Compute it again and give the final number.' });
    reply = await ask('solver', solver, 32);
    answer = lastNumber(reply) || answer;
  }
  if (process.env.VOLT_OUTPUT_FILE) writeFileSync(process.env.VOLT_OUTPUT_FILE, answer);
  console.log(answer);
}

main().catch((error) => {
  console.error(`team agent failed: ${error?.name ?? 'Error'}: ${error?.message ?? error}`);
  process.exit(1);
});
