/**
 * V8 flags the gateway process starts with (`volt up`, deploy/volt/gateway.yaml, bench/gateway.ts). Every call
 * allocates its request, the engine's answer and a span, all short-lived: a larger young generation scavenges less
 * often and promotes less of them (measured with bench/gateway.ts: about 5 % less CPU per call). It costs up to
 * ~200 MiB of reserved heap.
 */
export const GATEWAY_NODE_FLAGS = ['--max-semi-space-size=64'];
