/**
 * The push loop and the auth proxy behind it: the push channel (push-channel.ts) wakes the poll loop on each kick
 * and hands each tunnelled Kubernetes API request to the auth proxy (api-proxy.ts). The proxy is set up once, at
 * start, after the proxy's ClusterRoles are applied (proxy-rbac.ts); without them the cluster's own RBAC applies.
 */
import { type ApiProxy, apiProxy } from '../api-proxy.ts';
import { AGENT_FIELD_MANAGER, type AgentState } from '../agent-state.ts';
import { ensureProxyRbac } from '../proxy-rbac.ts';
import { runPushChannel } from '../push-channel.ts';
import { messageOf } from '../../problems.ts';

/**
 * Starts the auth proxy; its failure is logged here, and a stream tunnelled to a proxy that failed is destroyed
 * with that error.
 */
export function startApiProxy(state: AgentState): Promise<ApiProxy> {
  const { log, kubeConfig } = state.options;
  const proxy = (async () => {
    await ensureProxyRbac(state.cluster.withSignal(state.signal), AGENT_FIELD_MANAGER).catch((error: unknown) =>
      log.warn({ error: messageOf(error) }, "the auth proxy's ClusterRoles were not applied; the cluster's own RBAC applies"),
    );
    return await apiProxy(kubeConfig, log.child({ component: 'api-proxy' }));
  })();
  proxy.catch((error: unknown) => log.warn({ error: messageOf(error) }, 'the auth proxy cannot reach this cluster'));
  return proxy;
}

/** Runs the push channel until the agent stops (it reconnects by itself, so it is not supervised). */
export function runPush(state: AgentState, proxy: Promise<ApiProxy>): Promise<void> {
  const { client, log } = state.options;
  return runPushChannel({
    server: client.server,
    token: () => client.token,
    tokenReplaced: () => state.tokenReplaced,
    onKick: () => state.pollWakeup.wake(),
    onOpen: () => state.pollWakeup.wake(),
    onProxyStream: (stream, request) =>
      void proxy.then(
        (ready) => ready.forward(stream, request),
        (error: unknown) => stream.destroy(error instanceof Error ? error : new Error(String(error))),
      ),
    log,
    signal: state.signal,
  });
}
