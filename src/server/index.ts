/** The fleet server role's public entry point: what `gantry server` starts, and how it reads its encryption key. */
export { loadEncryptionKey } from './encryption-key.ts';
export { DEFAULT_DEPLOY_TOKEN_POLICY, startFleetServer } from './server.ts';
