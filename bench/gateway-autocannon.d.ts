// autocannon ships no types; the bench uses only this call and these fields.
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
    requests?: { setupRequest?: (req: Record<string, unknown>) => Record<string, unknown> }[];
  }
  interface Result {
    requests: { average: number; total: number };
    errors: number;
    non2xx: number;
  }
  export default function autocannon(opts: Options): Promise<Result>;
}
