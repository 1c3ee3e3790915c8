/**
 * The one state the agent's loops share (loops/): its options and stop signal, the cluster and what a sync needs
 * (sync.ts's SyncContext), the services the server last listed and what the agent did with each, the gate Jobs it
 * follows, and the wakeups that end a loop's wait early (a kick, a due repair, a gate Job, a watched change). Every loop runs on the same event loop, so the
 * state needs no locking: a loop only reads or writes it between its awaits.
 */
import type { AgentDeployment } from '../api/services.ts';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { AgentClient } from '../client/agent-client.ts';
import type { AgentReport, AgentService } from '../api/agent.ts';
import type { AgentPreview } from '../api/previews.ts';
import { AppliedObjects } from '../deploy/applied-objects.ts';
import { inMemoryRenderCache } from '../target/render-cache.ts';
import type { Engine } from '../engine.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { Logger } from '../logger.ts';
import { DesiredState } from './desired-state.ts';
import type { Expected } from './drift.ts';
import { GateJobs } from './gate-jobs.ts';
import { SourceCache } from './source-cache.ts';
import type { SyncContext, SyncOutcome } from './sync.ts';
import type { TokenStore } from './token-store.ts';
import { Wakeup } from './wakeup.ts';

export const AGENT_FIELD_MANAGER = 'gantry-agent';

export interface AgentOptions {
  /** Holds the deploy token, which a rotation replaces (AgentState.useToken). */
  client: AgentClient;
  /** Where the deploy token is kept across restarts; without one the agent does not rotate it (token-rotation.ts). */
  tokenStore?: TokenStore | undefined;
  /**
   * How this agent runs when it is the install's Deployment (its server URL and token Secret), told to the server in
   * each ping so that it keeps the agent as the service gantry-agent; undefined for an agent run otherwise.
   */
  deployment?: AgentDeployment | undefined;
  /** The version the agent reports; default GANTRY_VERSION (tests run one build as several versions). */
  version?: string | undefined;
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
  /** A drift repair after another waits this long, the third six times as long (repair.ts). */
  repairBackoffMs: number;
  pingIntervalMs: number;
  /** How often the components of services not all running are looked at again (and reported when they changed). */
  healthIntervalMs: number;
  /** Readiness waits and deletions of one sync, in milliseconds. */
  syncTimeoutMs: number;
}

/** What the agent did with one service, by service id in `AgentState.services`. */
export interface ServiceState {
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
  /** The last outcome, whose components the health and drift loops refresh. */
  outcome?: SyncOutcome;
  /** What each object of the last apply should look like (drift.ts), by refKey; objects that failed have none. */
  expected?: Map<string, Expected>;
  /** When drift was repaired (epoch ms), oldest first, within the last repair window (repair.ts). */
  repairs: number[];
  /** A drift repair is due at this time: the poll syncs the service then. */
  repairAt?: number;
}

export class AgentState {
  readonly options: AgentOptions;
  /** Fires when the agent stops: every loop, sync and request under way ends. */
  readonly signal: AbortSignal;
  readonly cluster: Cluster;
  readonly context: SyncContext;
  /** Unpacked revision sources by digest, `<dataDir>/sources`. */
  readonly sources: SourceCache;
  /** The services last listed, sealed on disk (`<dataDir>/services.sealed`) for when the server is away. */
  readonly desired: DesiredState;
  /** What was done with each service, by service id; a deleted service leaves once its last report is accepted. */
  readonly services = new Map<string, ServiceState>();
  /** The services the server listed last (or the disk had): undefined until the first poll. */
  known: AgentService[] | undefined;
  readonly gateJobs: GateJobs;
  /** The previews the last poll listed, for the previews loop, which `previewsWakeup` wakes. */
  previews: AgentPreview[] = [];
  readonly previewsWakeup = new Wakeup();
  /** Wakes the gates loop when a poll lists a gate to follow. */
  readonly gatesWakeup = new Wakeup();
  /** Wakes the poll loop when the push channel is kicked or a drift repair is due. */
  readonly pollWakeup = new Wakeup();
  /** Services whose objects the watch saw change (by service id), for the drift loop, which `driftWakeup` wakes. */
  readonly driftDirty = new Set<string>();
  /** When the drift loop looks at a service again (epoch ms, by service id): a repair's backoff or hold ends. */
  readonly driftChecks = new Map<string, number>();
  readonly driftWakeup = new Wakeup();
  /** Provisioned clusters whose agent this (management) cluster's agent installed, or found installed. */
  readonly installedAgents = new Set<string>();
  /** The service the poll is syncing now: its objects change under the agent's own hand, which is no drift. */
  syncing: string | undefined;
  /** Fires when the deploy token is replaced: the push channel opened with it reconnects with the new one. */
  #tokenReplaced = new AbortController();

  constructor(options: AgentOptions, signal: AbortSignal) {
    this.options = options;
    this.signal = signal;
    this.sources = new SourceCache(path.join(options.dataDir, 'sources'));
    this.desired = new DesiredState(path.join(options.dataDir, 'services.sealed'), options.client.token);
    this.cluster = options.engine.clusters.get(options.kubeConfig, options.kubeConfig.getCurrentContext());
    this.context = {
      engine: options.engine,
      kubeConfig: options.kubeConfig,
      cluster: this.cluster,
      workDir: path.join(options.dataDir, 'work'),
      fieldManager: AGENT_FIELD_MANAGER,
      timeoutMs: options.syncTimeoutMs,
      progress: { step: (scope, message) => options.log.debug({ scope }, message) },
      signal,
      applied: new AppliedObjects(),
      renders: inMemoryRenderCache(),
    };
    this.gateJobs = new GateJobs({ cluster: this.cluster, client: options.client, fieldManager: AGENT_FIELD_MANAGER, log: options.log });
  }

  get log(): Logger {
    return this.options.log;
  }

  /** Fires when the deploy token in use now is replaced. */
  get tokenReplaced(): AbortSignal {
    return this.#tokenReplaced.signal;
  }

  /**
   * Switches to a rotated deploy token: requests are sent with it, the desired state on disk is sealed again with it,
   * and the push channel reconnects with it.
   */
  async useToken(token: string): Promise<void> {
    this.options.client.useToken(token);
    await this.desired.rekey(token);
    const replaced = this.#tokenReplaced;
    this.#tokenReplaced = new AbortController();
    replaced.abort(new Error('deploy token rotated'));
  }
}
