/**
 * `gantry agent` as a function: the fleet's pull agent for one cluster, as a few supervised loops in the shape of
 * Plural's deployment-operator, each catching its own failures and carrying on:
 * - ping: reports the cluster's Kubernetes version and the agent's version;
 * - poll: every interval plus random jitter, fetches the cluster's services from the server and syncs each one
 *   whose revision it has not applied, that is being deleted, or whose resync interval passed (drift repair);
 * - health: components not yet running are looked at again every few seconds and reported as they change;
 * - push: a WebSocket on which the server kicks the agent when a service changes, which wakes the poll at once,
 *   and tunnels users' Kubernetes API requests (the auth proxy, api-proxy.ts) to be sent on impersonating them;
 * - gate jobs: the pipeline JOB gates of this cluster, listed on each poll, their Jobs followed every half second
 *   while any runs.
 * The agent dials out only. When the server cannot be reached it keeps syncing the services it last heard of from
 * the sources on its disk (also across its own restarts: desired-state.ts), and picks up again when the server
 * answers; reports are sent only when they change.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { type AgentClient, type AgentReport, type AgentService } from '../client/agent-client.ts';
import type { Engine } from '../engine.ts';
import type { Logger } from '../logger.ts';
import { sleep } from '../sleep.ts';
import { GANTRY_VERSION } from '../version.ts';
import { apiProxy } from './api-proxy.ts';
import { ensureProxyRbac } from './proxy-rbac.ts';
import { runPushChannel } from './push-channel.ts';
import { DesiredState } from './desired-state.ts';
import { GateJobs } from './gate-jobs.ts';
import { SourceCache } from './source-cache.ts';
import { Wakeup } from './wakeup.ts';
import { deleteService, refreshComponents, type SyncContext, type SyncOutcome, syncService } from './sync.ts';
import { AppliedObjects } from '../deploy/applied-objects.ts';
import { inMemoryRenderCache } from '../target/render-cache.ts';

export const AGENT_FIELD_MANAGER = 'gantry-agent';

/** How often the Jobs of running JOB gates are looked at: a promotion waits on it, and each look is one GET. */
const GATE_CHECK_MS = 500;

export interface AgentOptions {
  client: AgentClient;
  /** The deploy token again, for the push channel (the client keeps its own). */
  token: string;
  /** False: poll only, no push channel. */
  pushChannel: boolean;
  engine: Engine;
  kubeConfig: KubeConfig;
  /** Sources and wrapper projects: `<dir>/sources`, `<dir>/work`. */
  dataDir: string;
  log: Logger;
  /** Milliseconds between polls (Plural: 2 min). */
  pollIntervalMs: number;
  /** Up to this many milliseconds are added to each wait, so a fleet does not poll in step (Plural: 15 s). */
  jitterMs: number;
  /** A service applied this long ago is synced again to repair drift. */
  resyncIntervalMs: number;
  pingIntervalMs: number;
  /** How often the components of services not all running are looked at again (and reported when they changed). */
  healthIntervalMs: number;
  /** Readiness waits and deletions of one sync, in milliseconds. */
  syncTimeoutMs: number;
}

export interface RunningAgent {
  /** Resolves when every loop has stopped; a sync under way is cancelled. */
  stop(): Promise<void>;
}

interface ServiceState {
  /** Revision last applied (a render error leaves the previous one). */
  appliedRevisionId?: string;
  syncedAt: number;
  /** Hash of the last report the server accepted. */
  reported?: string;
  /** A report the server has not accepted yet (it was away); sent again on every poll. */
  pending?: AgentReport;
  /** The revision whose last sync failed; it is tried again at `retryAt` (backoff), not on every poll. */
  failedRevisionId?: string;
  retryAt?: number;
  failures: number;
  /** The last outcome, whose components the health loop refreshes. */
  outcome?: SyncOutcome;
}

/** Backoff after failed syncs of one revision: 5 s, doubling, at most 5 min. */
function retryDelayMs(failures: number): number {
  return Math.min(5 * 60_000, 5_000 * 2 ** Math.max(0, failures - 1));
}

export function startAgent(options: AgentOptions): RunningAgent {
  const stopping = new AbortController();
  const { signal } = stopping;
  const sources = new SourceCache(path.join(options.dataDir, 'sources'));
  const states = new Map<string, ServiceState>();
  const desired = new DesiredState(path.join(options.dataDir, 'services.sealed'), options.token);
  let known: AgentService[] | undefined;
  const cluster = options.engine.clusters.get(options.kubeConfig, options.kubeConfig.getCurrentContext());
  const context: SyncContext = {
    engine: options.engine,
    kubeConfig: options.kubeConfig,
    cluster,
    workDir: path.join(options.dataDir, 'work'),
    fieldManager: AGENT_FIELD_MANAGER,
    timeoutMs: options.syncTimeoutMs,
    progress: { step: (scope, message) => options.log.debug({ scope }, message) },
    signal,
    applied: new AppliedObjects(),
    renders: inMemoryRenderCache(),
  };

  const gateJobs = new GateJobs({ cluster, client: options.client, fieldManager: AGENT_FIELD_MANAGER, log: options.log });
  const gatesWakeup = new Wakeup();

  const ping = async () => {
    const version = (await cluster.version()).replace(/^v/, '');
    await options.client.ping({ kubernetesVersion: version, agentVersion: GANTRY_VERSION }, signal);
  };

  const poll = async () => {
    const listed = await options.client.services(signal).catch((error: unknown) => {
      if (!signal.aborted) options.log.warn({ error: messageOf(error) }, 'cannot reach the server; keeping the last desired state');
      return undefined;
    });
    if (signal.aborted) return;
    if (listed) {
      known = listed;
      await desired.save(listed).catch((error: unknown) => options.log.warn({ error: messageOf(error) }, 'cannot save the desired state'));
    } else {
      known ??= await loadDesiredState();
    }
    for (const service of known ?? []) {
      if (signal.aborted) return;
      await syncIfDue(service);
      await sendPending(service);
    }
    if (listed) {
      const gates = await options.client.gates(signal).catch((error: unknown) => {
        if (!signal.aborted) options.log.warn({ error: messageOf(error) }, 'cannot list the gate jobs');
        return undefined;
      });
      if (gates) gateJobs.update(gates);
      // The gates loop may be in a long wait from when no gate ran: it follows new Jobs from now on.
      if (gateJobs.following()) gatesWakeup.wake();
    }
  };

  /** What the agent knew before it restarted, so the cluster keeps its desired state while the server is away. */
  const loadDesiredState = async (): Promise<AgentService[]> => {
    try {
      const services = (await desired.load()) ?? [];
      options.log.info({ services: services.length }, 'desired state read from disk');
      return services;
    } catch (error) {
      options.log.warn({ error: messageOf(error) }, 'the desired state on disk is not used');
      return [];
    }
  };

  const syncIfDue = async (service: AgentService) => {
    const state: ServiceState = states.get(service.id) ?? { syncedAt: 0, failures: 0 };
    const now = Date.now();
    const failing = state.failedRevisionId === service.revision.id;
    const retryDue = failing && now >= (state.retryAt ?? 0);
    const changed = state.appliedRevisionId !== service.revision.id && !failing;
    if (!(service.deleting || changed || retryDue || now - state.syncedAt >= options.resyncIntervalMs)) return;
    if (service.waitingFor.length > 0 && !service.deleting) {
      options.log.info({ service: service.name, waitingFor: service.waitingFor }, 'waiting for dependencies to be healthy');
      return;
    }
    const log = options.log.child({ service: service.name, revision: service.revision.number });
    try {
      const outcome = service.deleting ? await deleteService(service, context) : await syncSource(service);
      if (outcome.applied) state.appliedRevisionId = service.revision.id;
      const failed = !outcome.applied || outcome.errors.length > 0;
      state.failures = failed ? (state.failedRevisionId === service.revision.id ? state.failures + 1 : 1) : 0;
      state.failedRevisionId = failed ? service.revision.id : undefined;
      state.retryAt = failed ? Date.now() + retryDelayMs(state.failures) : undefined;
      state.syncedAt = Date.now();
      state.outcome = outcome;
      states.set(service.id, state);
      log.info(
        { components: outcome.components.length, errors: outcome.errors.length, renderReused: outcome.renderReused },
        service.deleting ? 'deleted' : 'synced',
      );
      queueReport(service, state, outcome);
    } catch (error) {
      if (signal.aborted) return;
      log.error({ error: messageOf(error) }, 'sync failed');
    }
  };

  const syncSource = async (service: AgentService): Promise<SyncOutcome> => {
    const { digest } = service.revision;
    let dir = await sources.find(digest);
    if (!dir) {
      try {
        dir = await sources.add(digest, await options.client.tarball(service.id, digest, signal, sources.limits.maxTarballBytes));
      } catch (error) {
        if (signal.aborted) throw error;
        return { applied: false, components: [], errors: [{ source: 'download', message: messageOf(error) }] };
      }
    }
    return await syncService(service, dir, context);
  };

  const queueReport = (service: AgentService, state: ServiceState, outcome: SyncOutcome) => {
    const payload: AgentReport = {
      // After a render error the last applied revision still runs; its id is what the server should see.
      revisionId: state.appliedRevisionId ?? service.revision.id,
      components: outcome.components,
      errors: outcome.errors,
    };
    if (reportHash(payload) !== state.reported) state.pending = payload;
  };

  const sendPending = async (service: AgentService) => {
    const state = states.get(service.id);
    if (!state?.pending) return;
    try {
      await options.client.report(service.id, state.pending, signal);
    } catch (error) {
      if (!signal.aborted) options.log.warn({ service: service.name, error: messageOf(error) }, 'report not delivered; will retry');
      return;
    }
    state.reported = reportHash(state.pending);
    state.pending = undefined;
    if (service.deleting) states.delete(service.id);
  };

  /** Components keep changing after a sync (pods start, volumes bind): report them as they settle. */
  const health = async () => {
    for (const service of known ?? []) {
      const state = states.get(service.id);
      const outcome = state?.outcome;
      if (signal.aborted || !state || !outcome || service.deleting) continue;
      if (outcome.components.every((component) => component.state === 'RUNNING' && component.synced)) continue;
      state.outcome = { ...outcome, components: await refreshComponents(cluster, outcome.components) };
      queueReport(service, state, state.outcome);
      await sendPending(service);
    }
  };

  const proxy = (async () => {
    await ensureProxyRbac(cluster.withSignal(signal), AGENT_FIELD_MANAGER).catch((error: unknown) =>
      options.log.warn({ error: messageOf(error) }, "the auth proxy's ClusterRoles were not applied; the cluster's own RBAC applies"),
    );
    return await apiProxy(options.kubeConfig, options.log.child({ component: 'api-proxy' }));
  })();
  proxy.catch((error: unknown) => options.log.warn({ error: messageOf(error) }, 'the auth proxy cannot reach this cluster'));
  const wakeup = new Wakeup();
  const loops = [
    supervise(
      'ping',
      ping,
      (ms) => sleep(ms, signal).catch(() => undefined),
      () => options.pingIntervalMs,
      options.log,
      signal,
    ),
    supervise(
      'health',
      health,
      (ms) => sleep(ms, signal).catch(() => undefined),
      () => options.healthIntervalMs,
      options.log,
      signal,
    ),
    supervise(
      'gates',
      () => gateJobs.check(signal),
      (ms) => gatesWakeup.wait(ms, signal),
      () => (gateJobs.following() ? GATE_CHECK_MS : options.healthIntervalMs),
      options.log,
      signal,
    ),
    supervise(
      'poll',
      poll,
      (ms) => wakeup.wait(ms, signal),
      () => options.pollIntervalMs + Math.random() * options.jitterMs,
      options.log,
      signal,
    ),
    ...(options.pushChannel
      ? [
          runPushChannel({
            server: options.client.server,
            token: options.token,
            onKick: () => wakeup.wake(),
            onProxyStream: (stream, request) =>
              void proxy.then(
                (ready) => ready.forward(stream, request),
                (error: unknown) => stream.destroy(error instanceof Error ? error : new Error(String(error))),
              ),
            log: options.log,
            signal,
          }),
        ]
      : []),
  ];
  return {
    async stop() {
      stopping.abort(new Error('agent stopping'));
      await Promise.all(loops);
      await proxy.then((ready) => ready.close()).catch(() => undefined);
    },
  };
}

/**
 * Runs `work` now and then again after each `wait(interval())` until `signal` fires; a failure is logged and the
 * loop goes on.
 */
async function supervise(
  name: string,
  work: () => Promise<void>,
  wait: (ms: number) => Promise<void>,
  interval: () => number,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await work();
    } catch (error) {
      if (!signal.aborted) log.warn({ loop: name, error: messageOf(error) }, 'loop iteration failed');
    }
    await wait(interval());
  }
}

function reportHash(report: AgentReport): string {
  return createHash('sha256').update(JSON.stringify(report)).digest('hex');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
