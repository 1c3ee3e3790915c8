/**
 * `gantry server` as a function: opens the database (migrating it), makes the first admin token on an empty
 * database, starts the repository poller and serves the API until closed. The CLI (cli/server.ts) and the tests
 * start it the same way.
 */
import { GANTRY_IMAGE_REPOSITORY } from '../version.ts';
import { Engine } from '../engine.ts';
import { serverEngineConfig } from '../engine-config.ts';
import type { Logger } from '../logger.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { ServiceRef } from '../store/services.ts';
import path from 'node:path';
import { trackCharts } from './chart-tracker.ts';
import { trackCommits } from './commit-tracker.ts';
import type { FleetChange } from '../api/events.ts';
import { FleetChanges } from './fleet-changes.ts';
import { localKickBus, postgresKickBus } from './kick-bus.ts';
import { PushChannels } from './push-channels.ts';
import { ReplicaSet } from './replica-set.ts';
import { RepositoryPoller } from './repository-poller.ts';
import { ServiceSources } from './service-sources.ts';
import { TarballStore } from './tarballs.ts';
import { ensureAdminToken } from '../store/api-tokens.ts';
import { ensureAdminUser } from '../store/users.ts';
import { openStore, type Store } from '../store/database.ts';
import { resealLegacyValues } from '../store/reseal.ts';
import { buildApp } from './app.ts';
import { outboundDispatcher } from './outbound.ts';
import { Notifier } from './notifier.ts';
import { Previews } from './previews.ts';
import { PipelineRunner } from './pipelines.ts';
import { RolloutRunner } from './rollouts.ts';
import { messageOf } from '../problems.ts';
import { type DeployTokenPolicy, validDeployTokens } from '../store/deploy-tokens.ts';

export interface FleetServerOptions {
  /** A PostgreSQL URL or a SQLite file path (see openStore). */
  databaseUrl: string;
  host: string;
  /** 0 picks a free port (see FleetServer.url). */
  port: number;
  log: Logger;
  version: string;
  /** The key that seals secrets in the database; every replica of one database needs the same. */
  box: SecretBox;
  /** Git mirrors and snapshots (see EngineConfig.cacheDir). */
  cacheDir: string;
  /** Milliseconds between fetches of every git repository (and looks at helm version ranges). Default 60 s. */
  gitPollIntervalMs?: number;
  /** A change deleting more than this share (0..1) of one global service's copies is held until confirmed. Default 0.5. */
  maxDeleteShare?: number;
  /** Turns on the push webhook POST /hooks/git with this secret (see gitops/webhooks.ts). */
  webhookSecret?: string;
  /** The first admin token, on an empty database (`--admin-token-file`); default a new random one. */
  adminToken?: string;
  /**
   * Where the other replicas reach this one (they pass it proxied requests for the agents whose sockets it holds);
   * default the address it listens on.
   */
  advertiseUrl?: string;
  /** See AppOptions.trustProxy. */
  trustProxy?: string;
  /** See AppOptions.publicUrl. */
  publicUrl?: URL;
  /** The first admin user's password, on a database without users (`--admin-password-file`); default a random one. */
  adminPassword?: string;
  /** Milliseconds between this replica's heartbeats; repositories move off a replica silent for 3 of them. Default 10 s. */
  heartbeatIntervalMs?: number;
  /** The clock pipelines' WINDOW gates are evaluated with; default the system's (tests inject one). */
  now?: () => Date;
  /** CIDRs of special addresses services' chart URLs may reach (outbound.ts): `--allow-outbound`. */
  outboundAllow?: readonly string[];
  /** See DeployTokenPolicy; default DEFAULT_DEPLOY_TOKEN_POLICY. */
  deployTokens?: DeployTokenPolicy;
  /** The agents' image repository, tagged with each cluster's wanted agent version (default GANTRY_IMAGE_REPOSITORY). */
  agentImage?: string;
}

/**
 * An older deploy token works 10 minutes after a newer one's first use (time for a second agent pod to go); an agent
 * rotates its token when it is 30 days old.
 */
export const DEFAULT_DEPLOY_TOKEN_POLICY: DeployTokenPolicy = { overlapMs: 10 * 60_000, maxAgeMs: 30 * 24 * 3_600_000 };

export interface FleetServer {
  /** http://host:port the server listens on. */
  url: string;
  store: Store;
  /** The admin token made by this start, when the database had none; shown once, never stored in clear. */
  adminToken: string | undefined;
  /** The password of the `admin` user made by this start, when the database had no user; shown once, stored hashed. */
  adminPassword: string | undefined;
  /** The agents' push channels held by this replica. */
  channels: PushChannels;
  /** This replica among the live ones. */
  replicas: ReplicaSet;
  /** Release pipelines: their evaluation, as a window timer runs it. */
  pipelines: PipelineRunner;
  /** Progressive rollouts: their evaluation, as a start or a timer runs it. */
  rollouts: RolloutRunner;
  close(): Promise<void>;
}

/** @throws Error when the database cannot be opened or migrated, or the address is taken. */
export async function startFleetServer(options: FleetServerOptions): Promise<FleetServer> {
  const store = await openStore(options.databaseUrl);
  const engine = new Engine(
    serverEngineConfig({
      cacheDir: options.cacheDir,
      allowSystemEnvHint: 'the server renders nothing',
      onTemplateStderr: () => undefined,
      // The poller and API requests fetch explicitly (GitCache.fetch); between them the mirror serves as it is.
      gitRefreshMs: options.gitPollIntervalMs ?? 60_000,
    }),
  );
  const tarballs = new TarballStore(path.join(options.cacheDir, 'fleet', 'tarballs'));
  // Every connection made for a service's chart is checked as it is made (outbound.ts).
  const egress = outboundDispatcher({ allow: options.outboundAllow ?? [] });
  const charts = { ...engine.charts, egress };
  const sources = new ServiceSources({ db: store.db, box: options.box, git: engine.git, charts, tarballs });
  const channels = new PushChannels({
    validTokens: (ids) => validDeployTokens(store.db, ids),
    onCheckError: (error) => options.log.warn({ error: messageOf(error) }, "the push channels' deploy tokens were not checked"),
  });
  const changes = new FleetChanges();
  const handlers = {
    onKick: (clusterId: string, serviceId: string) => {
      channels.kick(clusterId, serviceId);
      // Every service change kicks its agent, so every replica hears of it here; 'gates' is the JOB gates' kick.
      if (serviceId !== 'gates') changes.emit({ kind: 'service', id: serviceId });
    },
    onChange: (change: FleetChange) => changes.emit(change),
  };
  const bus = await (
    store.kind === 'postgres'
      ? postgresKickBus(options.databaseUrl, handlers, options.log.child({ component: 'kick-bus' }))
      : localKickBus(handlers)
  ).catch(async (error: unknown) => {
    await engine.close();
    await store.close();
    throw error;
  });
  const onServiceChange = (service: ServiceRef) => bus.publish(service.clusterId, service.id);
  const replicas = new ReplicaSet({
    db: store.db,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 10_000,
    log: options.log.child({ component: 'replica-set' }),
  });
  const poller = new RepositoryPoller({
    db: store.db,
    box: options.box,
    git: engine.git,
    intervalMs: options.gitPollIntervalMs ?? 60_000,
    log: options.log.child({ component: 'repository-poller' }),
    onPulled: (repositoryId) =>
      trackCommits(
        {
          db: store.db,
          box: options.box,
          sources,
          log: options.log.child({ component: 'commit-tracker' }),
          onRevised: onServiceChange,
          rollouts,
        },
        repositoryId,
      ),
    owns: (repositoryId) => replicas.owns(repositoryId),
    onRound: () =>
      trackCharts({
        db: store.db,
        box: options.box,
        sources,
        log: options.log.child({ component: 'chart-tracker' }),
        onRevised: onServiceChange,
        owns: (url) => replicas.owns(url),
        rollouts,
      }),
  });
  const notifier = new Notifier({ db: store.db, box: options.box, log: options.log.child({ component: 'notifier' }) });
  const rollouts = new RolloutRunner({
    db: store.db,
    box: options.box,
    log: options.log.child({ component: 'rollouts' }),
    onChange: onServiceChange,
    onRolloutChange: (subject, rollout) => {
      if (!subject.pipeline) return bus.announce({ kind: 'globalservice', name: subject.name });
      bus.announce({ kind: 'pipeline', name: subject.pipeline });
      // The stage's services are all at their promoted revisions: the stage may record its context now.
      if (rollout.state === 'DONE') void pipelines.stageRolledOut(subject.pipeline, subject.stage!);
    },
    notifier,
    ...(options.now ? { now: options.now } : {}),
  });
  const previews = new Previews({
    db: store.db,
    box: options.box,
    sources,
    onChange: onServiceChange,
    onReported: (preview) => pipelines.previewReported(preview),
  });
  const pipelines = new PipelineRunner({
    db: store.db,
    box: options.box,
    sources,
    previews,
    onChange: onServiceChange,
    notifier,
    onGatesChange: (clusterId) => bus.publish(clusterId, 'gates'),
    onPipelineChange: (name) => bus.announce({ kind: 'pipeline', name }),
    log: options.log.child({ component: 'pipelines' }),
    ...(options.now ? { now: options.now } : {}),
    rollouts,
  });
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  try {
    const adminToken = await ensureAdminToken(store.db, new Date(), options.adminToken);
    const adminPassword = await ensureAdminUser(store.db, options.adminPassword);
    const resealed = await resealLegacyValues(store.db, options.box, options.log.child({ component: 'reseal' }));
    if (resealed > 0) options.log.info({ count: resealed }, 'sealed values of an older Gantry sealed again, bound to their rows');
    app = await buildApp({
      store,
      box: options.box,
      poller,
      sources,
      tarballs,
      channels,
      replicas,
      maxDeleteShare: options.maxDeleteShare ?? 0.5,
      webhookSecret: options.webhookSecret,
      onServiceChange,
      notifier,
      pipelines,
      previews,
      rollouts,
      changes,
      announce: (change) => bus.announce(change),
      log: options.log,
      version: options.version,
      trustProxy: options.trustProxy,
      publicUrl: options.publicUrl,
      outboundAllow: options.outboundAllow,
      deployTokens: options.deployTokens ?? DEFAULT_DEPLOY_TOKEN_POLICY,
      agentImage: options.agentImage ?? GANTRY_IMAGE_REPOSITORY,
    });
    await app.listen({ host: options.host, port: options.port });
    const address = app.server.address();
    const url = `http://${options.host}:${typeof address === 'object' && address ? address.port : options.port}`;
    await replicas.start(options.advertiseUrl ?? url);
    poller.start();
    void pipelines.start().catch((error: unknown) => options.log.error({ err: error }, 'pipelines could not be evaluated at start'));
    void rollouts.start().catch((error: unknown) => options.log.error({ err: error }, 'rollouts could not be evaluated at start'));
    const server = app;
    return {
      url,
      store,
      adminToken,
      adminPassword,
      channels,
      replicas,
      pipelines,
      rollouts,
      close: async () => {
        pipelines.close();
        rollouts.close();
        channels.close();
        await server.close();
        await notifier.idle();
        await bus.close();
        await poller.stop();
        await replicas.stop();
        await egress.close();
        await engine.close();
        await store.close();
      },
    };
  } catch (error) {
    await app?.close();
    await replicas.stop();
    await bus.close();
    await engine.close();
    await store.close();
    throw error;
  }
}
