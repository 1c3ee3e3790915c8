/**
 * Clusters the fleet makes through Cluster API (Plural CD "natively integrates with Cluster API"): registering one
 * with a provisioning spec also gives its management cluster the protected service `capi-<name>`, whose one object
 * is a Cluster API Cluster with a managed topology (src/capi/cluster-manifests.ts). The management cluster's agent
 * applies it like any service and reports the Cluster's readiness (src/health/capi-cluster.ts) as a component, and
 * that report is where the provisioning stands (provisioningStatus). Gantry never calls a cloud API itself.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { NewClusterBody, ProvisioningStatusSchema } from '../api/clusters.ts';
import type { CapiClusterSource, CapiClusterSpec } from '../capi/cluster-manifests.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { HttpError } from '../http/errors.ts';
import type { Logger } from '../logger.ts';
import { type Cluster, type CreatedCluster, createCluster, deleteCluster, getCluster, listClusters } from '../store/clusters.ts';
import { rotateDeployToken } from '../store/deploy-tokens.ts';
import { NotFoundError } from '../store/errors.ts';
import type { Database } from '../store/schema.ts';
import { createService, listServices, markServiceDeleted, type Service, type ServiceRef, type ServiceSpec } from '../store/services.ts';
import type { ServiceSources } from './service-sources.ts';

export type ProvisioningStatus = Static<typeof ProvisioningStatusSchema>;

/** The namespace of the Cluster API objects when the spec names none: Cluster API's own examples use it. */
export const DEFAULT_PROVISIONING_NAMESPACE = 'default';

export interface ProvisionedClustersDeps {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  /** Kicks the agent of a service that got a revision. */
  onChange: (service: ServiceRef) => void;
  log: Logger;
}

/**
 * The management cluster's service holding the objects of `cluster`: `capi-<cluster>`, or, where that would pass
 * the 63 characters of a name, its first characters and a hash of the whole.
 */
export function provisioningServiceName(cluster: string): string {
  const plain = `capi-${cluster}`;
  if (plain.length <= 63) return plain;
  const hash = createHash('sha256').update(cluster).digest('hex').slice(0, 8);
  return `${plain.slice(0, 54).replace(/-+$/, '')}-${hash}`;
}

/** The spec of the management cluster's service for `cluster`. */
export function provisioningServiceSpec(source: CapiClusterSource): ServiceSpec {
  return { namespace: source.namespace, renderer: { kind: 'raw' }, capi: source };
}

/** Registers provisioned clusters and reads how far they are; stateless beyond its deps. */
export class ProvisionedClusters {
  readonly #deps: ProvisionedClustersDeps;

  constructor(deps: ProvisionedClustersDeps) {
    this.#deps = deps;
  }

  /**
   * Registers the cluster and hands its Cluster API objects to its management cluster's agent; nothing is left
   * registered when that fails.
   * @throws HttpError 400 naming `body.provisioning.management` when it is not a registered cluster or is the new
   *   cluster itself; ConflictError when the name or handle is taken, or the management cluster has a service of
   *   the name the objects' service takes.
   */
  async create(input: NewClusterBody & { provisioning: NonNullable<NewClusterBody['provisioning']> }): Promise<CreatedCluster> {
    const { db, box, sources } = this.#deps;
    const field = 'body.provisioning.management';
    if (input.provisioning.management === input.name) throw new HttpError(400, 'a cluster cannot be its own management cluster', field);
    const management = await getCluster(db, input.provisioning.management).catch((error: unknown) => {
      if (error instanceof NotFoundError)
        throw new HttpError(400, `management cluster ${input.provisioning.management} is not registered`, field);
      throw error;
    });
    const provisioning: CapiClusterSpec = {
      ...input.provisioning,
      namespace: input.provisioning.namespace ?? DEFAULT_PROVISIONING_NAMESPACE,
    };
    const created = await createCluster(db, { ...input, provisioning });
    try {
      const spec = provisioningServiceSpec({ ...provisioning, cluster: input.name });
      const source = await sources.resolveSpec(spec);
      const author = { by: 'gantry', message: `Cluster API objects of cluster ${input.name}` };
      const service = await createService(
        db,
        box,
        { clusterId: management.id, name: provisioningServiceName(input.name), spec, protect: true },
        source,
        author,
      );
      this.#deps.log.info(
        { cluster: input.name, management: management.name, class: provisioning.class },
        'cluster provisioning handed to its management cluster',
      );
      this.#deps.onChange(service);
    } catch (error) {
      await deleteCluster(db, input.name);
      throw error;
    }
    return created;
  }

  /**
   * A fresh deploy token for the agent the management cluster's agent installs into `name`, every earlier token of
   * the cluster revoked (an install that crashed half-way asks again), with the image its agent runs.
   * @throws NotFoundError when `name` is no cluster that `management`'s Cluster API makes (the same answer as for a
   *   cluster that does not exist, so a token learns nothing of other clusters); HttpError 409 once its agent pinged.
   */
  async agentInstall(management: Cluster, name: string, imageRepository: string): Promise<{ deployToken: string; image: string }> {
    const cluster = await getCluster(this.#deps.db, name);
    if (cluster.provisioning?.management !== management.name) throw new NotFoundError('cluster', name);
    if (cluster.pingedAt !== null) throw new HttpError(409, `the agent of cluster ${name} is installed: it pinged at ${cluster.pingedAt}`);
    const deployToken = await rotateDeployToken(this.#deps.db, cluster.id, { revokeOthers: true });
    this.#deps.log.info(
      { cluster: name, management: management.name },
      'deploy token issued for the agent install of a provisioned cluster',
    );
    return { deployToken, image: `${imageRepository}:${cluster.wantedAgentVersion}` };
  }

  /**
   * Before `cluster` is deleted: a cluster Cluster API makes has its objects' service deleted by its management
   * cluster's agent, which deletes the Cluster API Cluster, and Cluster API tears the cluster down.
   * @throws HttpError 409 naming the clusters `cluster` makes, which would be left without their management cluster.
   */
  async beforeDelete(cluster: Cluster): Promise<void> {
    const { db } = this.#deps;
    const clusters = await listClusters(db);
    const made = clusters.filter((other) => other.provisioning?.management === cluster.name).map((other) => other.name);
    if (made.length > 0)
      throw new HttpError(
        409,
        `cluster ${cluster.name} makes ${made.join(', ')} through Cluster API: delete ${made.length === 1 ? 'it' : 'them'} first`,
      );
    const management = clusters.find((other) => other.name === cluster.provisioning?.management);
    if (!management) return;
    const service = (await listServices(db, { clusterId: management.id })).find((each) => each.spec.capi?.cluster === cluster.name);
    if (!service || service.deletedAt !== null) return;
    await markServiceDeleted(db, service.id);
    this.#deps.log.info(
      { cluster: cluster.name, management: management.name },
      'Cluster API objects of a deleted cluster handed to its management cluster for deletion',
    );
    this.#deps.onChange(service);
  }

  /** `clusters` with the provisioningStatus of those Cluster API makes (one read of the services when there are any). */
  async withStatus<C extends Cluster>(clusters: readonly C[]): Promise<Array<C & { provisioningStatus?: ProvisioningStatus }>> {
    if (!clusters.some((cluster) => cluster.provisioning)) return [...clusters];
    const { db } = this.#deps;
    const [services, all] = await Promise.all([listServices(db), listClusters(db)]);
    const ids = new Map(all.map((cluster) => [cluster.name, cluster.id]));
    const byKey = new Map(services.map((service) => [`${service.clusterId}/${service.name}`, service]));
    return clusters.map((cluster) => {
      if (!cluster.provisioning) return cluster;
      const name = provisioningServiceName(cluster.name);
      const service = byKey.get(`${ids.get(cluster.provisioning.management) ?? ''}/${name}`);
      return { ...cluster, provisioningStatus: provisioningStatusOf(cluster.name, name, service) };
    });
  }
}

/**
 * Where the provisioning of `cluster` stands, from its management cluster's service: the Cluster API Cluster's
 * component state and message, WAITING until the agent reported it (with the agent's error, when it had one).
 */
export function provisioningStatusOf(cluster: string, serviceName: string, service: Service | undefined): ProvisioningStatus {
  if (!service) return { service: serviceName, state: 'WAITING', message: `the management cluster has no service ${serviceName}` };
  const component = service.components.find((c) => c.group === 'cluster.x-k8s.io' && c.kind === 'Cluster' && c.name === cluster);
  if (!component) {
    const error = service.errors[0];
    const message = error ? `${error.source} error: ${error.message}` : "waiting for the management cluster's agent to apply it";
    return { service: service.name, state: 'WAITING', message };
  }
  return {
    service: service.name,
    state: component.state,
    message: component.message ?? (component.state === 'RUNNING' ? 'available' : ''),
  };
}
