// The Vercel AI SDK (npm `ai` with `@ai-sdk/openai` / `@ai-sdk/anthropic`) as a Volt agent: a multi-step tool loop
// with one `list_files` tool, its final text to VOLT_OUTPUT_FILE. The providers read OPENAI_BASE_URL / OPENAI_API_KEY
// and ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY, which the rollout contract sets; nothing else points them at Volt.
//   node examples/agent-clis/ai-sdk-agent.mjs openai-responses|openai-chat|anthropic [--stream]
import { readdirSync, writeFileSync } from 'node:fs';
import { anthropic } from '@ai-sdk/anthropic';
import { openai } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { taskPrompt } from './task-prompt.mjs';

const [provider, mode] = process.argv.slice(2);
const name = process.env.AGENT_MODEL ?? 'volt-policy';
const models = {
  // The provider's default: the Responses API.
  'openai-responses': () => openai(name),
  'openai-chat': () => openai.chat(name),
  anthropic: () => anthropic(name),
};
if (!(provider in models) || (mode !== undefined && mode !== '--stream')) {
  console.error('usage: ai-sdk-agent.mjs openai-responses|openai-chat|anthropic [--stream]');
  process.exit(2);
}

const request = {
  model: models[provider](),
  system: 'You are a coding agent working in the current directory. Use the tools, then answer in one line.',
  prompt: taskPrompt(),
  maxOutputTokens: Number(process.env.AGENT_MAX_TOKENS ?? 64),
  stopWhen: stepCountIs(Number(process.env.AGENT_MAX_TURNS ?? 3)),
  tools: {
    list_files: tool({
      description: 'List the files in the working directory.',
      inputSchema: z.object({}),
      execute: async () => readdirSync('.').sort().join('\n') || '(empty)',
    }),
  },
};
let text;
if (mode === '--stream') {
  const result = streamText({ ...request, onError: ({ error }) => console.error(error) });
  text = await result.text;
} else {
  text = (await generateText(request)).text;
}
console.log(text);
if (process.env.VOLT_OUTPUT_FILE) writeFileSync(process.env.VOLT_OUTPUT_FILE, text);
