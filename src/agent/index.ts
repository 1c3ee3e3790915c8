/**
 * The agent role's public entry point: what the CLI's `gantry agent run` starts (see agent.ts), alone or as one
 * candidate for its cluster's Lease (leader-election.ts), its probes, and where it keeps its token.
 */
export { startAgent } from './agent.ts';
export { AGENT_FIELD_MANAGER, type AgentOptions } from './agent-state.ts';
export { serveHealth } from './health-server.ts';
export { startElectedAgent } from './leader-election.ts';
export { fileTokenStore, secretTokenStore, type TokenStore } from './token-store.ts';
