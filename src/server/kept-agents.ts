/**
 * The agents the server keeps (Plural: the agent "is installed onto each cluster and perpetually managed by Plural CD
 * from then on"): an agent that runs as the install's Deployment says so in its ping (AgentDeployment: the server URL
 * it dials, its token Secret), and the server keeps the service gantry-agent of its cluster rendering that
 * Deployment, RBAC and token Secret at the image `<--agent-image>:<wanted version>` (clusters.ts:
 * wantedAgentVersion). The agent applies it like any service, so an upgrade is a revision and the Deployment rolls
 * the pod. The image's repository is the server's to choose, never the ping's: a leaked deploy token must not pick
 * what runs with the agent's rights; and the agent applies the service only while its server and Secret are its own
 * (agent/own-service.ts). Upgrades of the whole fleet go wave by wave through a rollout of the agent services.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Kysely } from 'kysely';
import type { AgentDeployment } from '../api/services.ts';
import { AGENT_NAME } from '../install/agent.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { Logger } from '../logger.ts';
import type { RolloutSpec } from '../api/rollouts.ts';
import { HttpError } from '../http/errors.ts';
import { type Cluster, getCluster, listClusters, setAgentVersionPin } from '../store/clusters.ts';
import { agentsSubject, type RolloutRunner, type RolloutSubject } from './rollouts.ts';
import { ConflictError, NotFoundError } from '../store/errors.ts';
import type { Database } from '../store/schema.ts';
import {
  createService,
  getService,
  listServices,
  type Service,
  type ServiceRef,
  type ServiceSpec,
  updateService,
} from '../store/services.ts';
import type { ServiceSources } from './service-sources.ts';

/** The name of every cluster's own agent service; a user's service may not take it (routes/services.ts). */
export const AGENT_SERVICE_NAME = AGENT_NAME;

export interface KeptAgentsDeps {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  /** The agents' image repository (`gantry server --agent-image`), tagged with each cluster's wanted version. */
  imageRepository: string;
  /** Kicks the agent of a service that got a revision. */
  onChange: (service: ServiceRef) => void;
  /** Moves agent upgrades wave by wave. */
  rollouts: RolloutRunner;
  log: Logger;
}

/** The spec of the agent service of a cluster whose agent runs as `deployment` and should run `version`. */
export function agentServiceSpec(deployment: AgentDeployment, imageRepository: string, version: string): ServiceSpec {
  const [namespace] = deployment.tokenSecret.split('/') as [string];
  return {
    namespace,
    renderer: { kind: 'raw' },
    agent: { image: `${imageRepository}:${version}`, server: deployment.server, tokenSecret: deployment.tokenSecret },
  };
}

/** Keeps each cluster's agent service at its wanted version; stateless beyond its deps, nothing to close. */
export class KeptAgents {
  readonly #deps: KeptAgentsDeps;

  constructor(deps: KeptAgentsDeps) {
    this.#deps = deps;
  }

  /**
   * After a ping from an agent running as `deployment`: makes the cluster's agent service, or revises it when the
   * Deployment or the wanted version changed. A user's service already named gantry-agent is left alone.
   * @returns the service when it was made or revised.
   */
  async keep(found: Cluster, deployment: AgentDeployment): Promise<Service | undefined> {
    const existing = await this.#agentService(found);
    // A new agent service holds the cluster at the version it is made at, so that a server of another version (the
    // next release, or a replica of a rolling server upgrade) never moves it: only an upgrade or an admin's pin does.
    const cluster =
      existing === undefined && found.agentVersionPin === null
        ? await setAgentVersionPin(this.#deps.db, found.name, found.wantedAgentVersion)
        : found;
    const spec = agentServiceSpec(deployment, this.#deps.imageRepository, cluster.wantedAgentVersion);
    if (existing === 'foreign' || (existing && isDeepStrictEqual(existing.spec, spec))) return undefined;
    // Held (an agents' rollout failed) at the revision it wants: its newer revision waits, and another would repeat it.
    if (existing?.pinned && isDeepStrictEqual(existing.revision.spec, spec)) return undefined;
    const source = await this.#deps.sources.resolveSpec(spec);
    const author = { by: 'gantry', message: `agent ${cluster.wantedAgentVersion}` };
    const { db, box } = this.#deps;
    const kept = existing
      ? (await updateService(db, box, existing.id, { spec }, source, author)).service
      : await createService(db, box, { clusterId: cluster.id, name: AGENT_SERVICE_NAME, spec, protect: true }, source, author).catch(
          (error: unknown) => {
            // A ping on another replica made it first.
            if (error instanceof ConflictError) return undefined;
            throw error;
          },
        );
    if (!kept) return undefined;
    this.#deps.log.info({ cluster: cluster.name, image: spec.agent?.image, revision: kept.revision.number }, 'agent service kept');
    this.#deps.onChange(kept);
    return kept;
  }

  /**
   * Holds the cluster's agent at `version` (null: the server's own) and revises its agent service at once, when it
   * has one, from the Deployment its last revision renders.
   * @throws NotFoundError when the cluster does not exist.
   */
  async pin(clusterName: string, version: string | null): Promise<Cluster> {
    const cluster = await setAgentVersionPin(this.#deps.db, clusterName, version);
    const existing = await this.#agentService(cluster);
    if (existing && existing !== 'foreign' && existing.spec.agent) {
      const { server, tokenSecret } = existing.spec.agent;
      await this.keep(cluster, { server, tokenSecret });
    }
    return await getCluster(this.#deps.db, clusterName);
  }

  /**
   * Upgrades the fleet's agents to `version` wave by wave (Plural's agents follow their console at once): a rollout
   * (rollouts.ts) of every agent service, pinned where it is, then each cluster's pin set to `version` and its
   * revision recorded, waiting for its wave. A copy is healthy once its agent pings with `version`; one that does not
   * within `spec.progressDeadline` fails the rollout, and with `onFailure: rollback` every cluster it changed goes back
   * to the revision it ran, pinned to its version again.
   * @throws HttpError 409 when no cluster's agent runs as the install's Deployment.
   */
  async upgrade(version: string, spec: RolloutSpec, by: string): Promise<RolloutSubject> {
    const { db, rollouts } = this.#deps;
    const services = (await listServices(db)).filter((service) => service.spec.agent && service.deletedAt === null);
    if (services.length === 0)
      throw new HttpError(409, "no cluster's agent runs as the install's Deployment: there is no agent service to upgrade");
    const subject = await rollouts.beginServices(agentsSubject(version), spec, services, `agent upgrade to ${version} by ${by}`);
    const clusters = new Map((await listClusters(db)).map((cluster) => [cluster.id, cluster]));
    for (const service of services) {
      const cluster = clusters.get(service.clusterId);
      if (!cluster || !service.spec.agent) continue;
      if (await rollouts.settleAgentPins(subject)) return subject;
      const pinned = await setAgentVersionPin(db, cluster.name, version);
      await this.keep(pinned, { server: service.spec.agent.server, tokenSecret: service.spec.agent.tokenSecret });
    }
    await rollouts.evaluateAll([subject]);
    await rollouts.settleAgentPins(subject);
    return subject;
  }

  /** The cluster's agent service; 'foreign' for a service of that name the server does not keep. */
  async #agentService(cluster: Cluster): Promise<Service | 'foreign' | undefined> {
    const service = await getService(this.#deps.db, cluster.id, AGENT_SERVICE_NAME).catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    });
    if (!service) return undefined;
    return service.spec.agent ? service : 'foreign';
  }
}
