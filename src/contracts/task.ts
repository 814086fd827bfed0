/**
 * A task of a task set (one JSON object per line of a .jsonl file). Only `id` and `input` reach the agent
 * (as VOLT_TASK); `reference` is what rewards compare against and never leaves Volt.
 */
export interface Task {
  id: string;
  input: Record<string, unknown>;
  reference?: Record<string, unknown>;
  /** A command run in the fresh rollout workdir before the agent starts (e.g. seeding a database); never seen by the agent. */
  setup?: { command: string[] };
}
