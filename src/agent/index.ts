/** The agent role's public entry point: what the CLI's `gantry agent run` starts (see agent.ts). */
export { startAgent } from './agent.ts';
