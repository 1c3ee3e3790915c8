/**
 * The agent's side of deploy token rotation (store/deploy-tokens.ts has the server's): when a ping's answer says its
 * token is due, the agent fetches a new token, stores it where it reads its token from (token-store.ts), switches to
 * it, and makes one request with it, which starts the old token's expiry on the server. The order is what keeps the
 * agent in: until the new token is stored the old one is the one that works, and once it is stored a restart starts
 * on it. A failure at any step leaves the old token in use, and the next due ping tries again.
 */
import { messageOf } from '../problems.ts';
import type { AgentState } from './agent-state.ts';

/** The agents that said once that they cannot rotate (each due ping would say it again). */
const saidCannot = new WeakSet<AgentState>();

/** Rotates the deploy token now; never throws (a failure is logged and left to the next ping). */
export async function rotateDeployToken(state: AgentState): Promise<void> {
  const { client, tokenStore, log } = state.options;
  if (!tokenStore) {
    if (saidCannot.has(state)) return;
    saidCannot.add(state);
    log.warn(
      'the server asks this agent to rotate its deploy token, but the token came from $GANTRY_DEPLOY_TOKEN, where the ' +
        'agent cannot store a new one: run it with --token-file or --token-secret',
    );
    return;
  }
  try {
    const token = await client.newDeployToken(state.signal);
    await tokenStore.write(token);
    await state.useToken(token);
    await client.cluster(state.signal);
    log.info({ store: tokenStore.where }, 'deploy token rotated');
  } catch (error) {
    if (!state.signal.aborted)
      log.error({ error: messageOf(error), store: tokenStore.where }, 'deploy token not rotated; the old one stays in use');
  }
}
