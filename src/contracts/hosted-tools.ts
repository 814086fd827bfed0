import { z } from 'zod';

/**
 * What a run does with hosted tools (web_search, file_search, code_interpreter, ...) an agent offers in a Responses
 * call, which a served policy cannot run: drop them and note it in the span (the default), or refuse the call.
 * Set in the run config (`agent.hostedTools`), carried to the gateway in each rollout's registration.
 */
export const hostedToolsSchema = z.enum(['drop', 'refuse']);
export type HostedTools = z.output<typeof hostedToolsSchema>;
