/** The agent role's public entry point: what the CLI's `gantry agent run` starts (see agent.ts), and where it keeps its token. */
export { startAgent } from './agent.ts';
export { AGENT_FIELD_MANAGER } from './agent-state.ts';
export { fileTokenStore, secretTokenStore, type TokenStore } from './token-store.ts';
