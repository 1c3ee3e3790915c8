/**
 * Keeps every global service's copies in line with the clusters: a copy on each cluster the global service selects,
 * none elsewhere. Every change that can move copies (a tag edit of a cluster, a new cluster, a change or deletion of
 * a global service) is planned first against the state it would make; a plan that would delete more than a set
 * share of one global service's copies is held, answered with the list of what it would delete, until the same
 * request is repeated with confirm (ApplicationSets are known for wiping fleets on one selector edit; Plural's
 * cascade is a plain boolean).
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import { type Cluster, getCluster, listClusters, setClusterTags } from '../store/clusters.ts';
import {
  createGlobalService,
  deleteGlobalService,
  getGlobalService,
  type GlobalService,
  listGlobalServices,
  type NewGlobalService,
  selects,
  type ServiceTemplate,
  templateSpec,
  updateGlobalService,
} from '../store/global-services.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { randomUUID } from 'node:crypto';
import type { Preview } from '../store/previews.ts';
import type { Previews } from './previews.ts';
import type { RolloutRunner } from './rollouts.ts';
import type { RolloutSpec } from '../api/rollouts.ts';
import {
  createService,
  getServiceById,
  listOwnedServiceRefs,
  markServiceDeleted,
  removeService,
  type ServiceRef,
  updateServices,
} from '../store/services.ts';
import { HttpError } from '../http/errors.ts';
import type { ServiceSources } from './service-sources.ts';
import { messageOf } from '../problems.ts';

export interface GlobalServiceDeps {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  log: Logger;
  /** A service changed: its agent should hear of it now. */
  onChange: (service: ServiceRef) => void;
  /** A plan deleting more than this share (0..1) of one global service's copies is held until confirmed. */
  maxDeleteShare: number;
  /** Previews of template edits on each copy's cluster. */
  previews: Previews;
  /** A template change of a global service with a rollout goes wave by wave. */
  rollouts: RolloutRunner;
}

interface Plan {
  create: Array<{ global: GlobalService; cluster: Cluster }>;
  remove: Array<{ global: GlobalService; service: ServiceRef; cluster: Cluster }>;
}

/**
 * The server's operations on global services and cluster tags, each planned, guarded and applied in the store. A
 * held plan throws HttpError 409 naming the count, the clusters and the share, and changes nothing; repeating it
 * with `confirm` goes ahead. Calls are not serialized here. Stateless beyond its `deps`; nothing to close.
 */
export class GlobalServices {
  readonly #deps: GlobalServiceDeps;

  constructor(deps: GlobalServiceDeps) {
    this.#deps = deps;
  }

  /** Creates the global service and its copies. @throws HttpError 400 naming the field of a bad template source. */
  async create(input: NewGlobalService): Promise<GlobalService> {
    await this.#deps.sources.resolveSpec(templateSpec(input.template), {
      fresh: true,
      fields: {
        repository: 'body.template.repository',
        ref: 'body.template.git.ref',
        folder: 'body.template.git.folder',
        helm: 'body.template.helm',
      },
    });
    const global = await createGlobalService(this.#deps.db, this.#deps.box, input);
    await this.#apply(await this.#plan([global], await listClusters(this.#deps.db)));
    return global;
  }

  /** Changes selector or template; the copies follow (template changes make new revisions). */
  async update(
    name: string,
    changes: Partial<Pick<GlobalService, 'tags' | 'distro' | 'template' | 'rollout' | 'ignoreClusters'>>,
    confirm: boolean,
  ): Promise<GlobalService> {
    const current = await getGlobalService(this.#deps.db, this.#deps.box, name);
    const next: GlobalService = { ...current, ...changes };
    const plan = await this.#plan([next], await listClusters(this.#deps.db));
    await this.#guard(plan, confirm);
    const stored = await updateGlobalService(this.#deps.db, this.#deps.box, next);
    await this.#apply(plan);
    if (changes.template) await this.#updateCopies(stored);
    return stored;
  }

  /**
   * Previews a template edit on every copy's cluster, changing nothing: each copy's agent dry-runs the service as the
   * template would make it against its live cluster.
   * @returns one preview per copy (a DONE one of the same source, values and live state is reused), with the copy's
   *   cluster and name.
   * @throws HttpError 400 naming the field of a template source that does not resolve.
   */
  async preview(
    name: string,
    template: ServiceTemplate,
    requestedBy: string,
  ): Promise<Array<{ preview: Preview; cluster: string; service: string }>> {
    const global = await getGlobalService(this.#deps.db, this.#deps.box, name);
    const spec = templateSpec(template);
    const values = { configuration: template.configuration ?? {}, secretValues: template.secretValues ?? {} };
    const origin = `globalservice/${global.id}/${randomUUID()}`;
    const ref = template.git?.ref ?? template.helm?.version ?? '';
    const fields = {
      repository: 'body.template.repository',
      ref: 'body.template.git.ref',
      folder: 'body.template.git.folder',
      helm: 'body.template.helm',
    };
    const previews: Array<{ preview: Preview; cluster: string; service: string }> = [];
    for (const { service, cluster } of await this.#copies(global)) {
      const copy = await getServiceById(this.#deps.db, service.id);
      const preview = await this.#deps.previews.ofChange(copy, { spec, values, ref, requestedBy, origin }, fields);
      previews.push({ preview, cluster: cluster.name, service: copy.name });
    }
    return previews;
  }

  /** Deletes the global service; its copies are deleted by their agents, or with `detach` forgotten and left running. */
  async delete(name: string, options: { detach: boolean; confirm: boolean }): Promise<void> {
    const global = await getGlobalService(this.#deps.db, this.#deps.box, name);
    const copies = await this.#copies(global);
    if (!options.detach) await this.#guard({ create: [], remove: copies.map((copy) => ({ global, ...copy })) }, options.confirm);
    for (const { service } of copies) {
      if (options.detach) await removeService(this.#deps.db, service.id);
      else await this.#remove(service);
    }
    await deleteGlobalService(this.#deps.db, global.id);
  }

  /** Sets a cluster's tags, adding and removing copies of global services as the new tags select them. */
  async setClusterTags(name: string, tags: Record<string, string>, confirm: boolean): Promise<Cluster> {
    const clusters = (await listClusters(this.#deps.db)).map((cluster) => (cluster.name === name ? { ...cluster, tags } : cluster));
    if (!clusters.some((cluster) => cluster.name === name)) await getCluster(this.#deps.db, name);
    const plan = await this.#plan(await listGlobalServices(this.#deps.db, this.#deps.box), clusters);
    await this.#guard(plan, confirm);
    const updated = await setClusterTags(this.#deps.db, name, tags);
    await this.#apply(plan);
    return updated;
  }

  /** Adds the copies a new cluster's tags call for. */
  async clusterAdded(): Promise<void> {
    const plan = await this.#plan(await listGlobalServices(this.#deps.db, this.#deps.box), await listClusters(this.#deps.db));
    await this.#apply({ create: plan.create, remove: [] });
  }

  async #plan(globals: readonly GlobalService[], clusters: readonly Cluster[]): Promise<Plan> {
    const plan: Plan = { create: [], remove: [] };
    for (const global of globals) {
      const copies = await this.#copies(global);
      const covered = new Set(copies.map(({ cluster }) => cluster.id));
      for (const cluster of clusters) {
        if (selects(global, cluster) && !covered.has(cluster.id)) plan.create.push({ global, cluster });
      }
      for (const copy of copies) {
        const cluster = clusters.find((c) => c.id === copy.cluster.id);
        if (!cluster || !selects(global, cluster)) plan.remove.push({ global, ...copy });
      }
    }
    return plan;
  }

  /** @throws HttpError 409 listing the copies when a global service would lose more than its share. */
  async #guard(plan: Plan, confirm: boolean): Promise<void> {
    if (confirm) return;
    const byGlobal = Map.groupBy(plan.remove, (entry) => entry.global.id);
    for (const removals of byGlobal.values()) {
      const global = removals[0]!.global;
      const total = (await this.#copies(global)).length;
      if (removals.length > this.#deps.maxDeleteShare * total) {
        const clusters = removals.map((entry) => entry.cluster.name).join(', ');
        throw new HttpError(
          409,
          `held: this would delete ${removals.length} of the ${total} services of global service ${global.name} (on ${clusters}), ` +
            `more than ${Math.round(this.#deps.maxDeleteShare * 100)}%; repeat with confirm=true to go ahead`,
        );
      }
    }
  }

  async #apply(plan: Plan): Promise<void> {
    for (const { global, cluster } of plan.create) {
      try {
        const spec = templateSpec(global.template);
        const source = await this.#deps.sources.resolveSpec(spec);
        const service = await createService(
          this.#deps.db,
          this.#deps.box,
          {
            clusterId: cluster.id,
            name: global.template.name,
            spec,
            configuration: global.template.configuration,
            secretValues: global.template.secretValues,
            ownerId: global.id,
          },
          source,
          { by: `globalservice/${global.name}`, message: `cluster ${cluster.name} selected` },
        );
        this.#deps.onChange(service);
      } catch (error) {
        this.#deps.log.warn({ globalService: global.name, cluster: cluster.name, error: messageOf(error) }, 'cannot add the service');
      }
    }
    for (const { service } of plan.remove) await this.#remove(service);
  }

  /** Gives every copy the global service's template; each copy's agent is kicked once its batch is committed. */
  async #updateCopies(global: GlobalService): Promise<void> {
    const spec = templateSpec(global.template);
    const source = await this.#deps.sources.resolveSpec(spec);
    const changes = { spec, configuration: global.template.configuration ?? {}, secretValues: global.template.secretValues ?? {} };
    const author = { by: `globalservice/${global.name}`, message: 'template changed' };
    const copies = await this.#copies(global);
    const updates = copies.map(({ service }) => ({ serviceId: service.id, changes, source, author }));
    // With a rollout, the copies are pinned first: the new revision waits for each copy's wave.
    const rolling = await this.#deps.rollouts.begin(copies.length > 0 ? [{ ownerId: global.id }] : [], 'template changed');
    await updateServices(this.#deps.db, this.#deps.box, updates, this.#deps.onChange);
    await this.#deps.rollouts.evaluateAll(rolling);
  }

  async #remove(service: ServiceRef): Promise<void> {
    await markServiceDeleted(this.#deps.db, service.id);
    this.#deps.onChange(service);
  }

  /** The live (not being deleted) copies of the global service, with their clusters. */
  async #copies(global: GlobalService): Promise<Array<{ service: ServiceRef; cluster: Cluster }>> {
    const [clusters, services] = await Promise.all([listClusters(this.#deps.db), listOwnedServiceRefs(this.#deps.db, global.id)]);
    const byId = new Map(clusters.map((cluster) => [cluster.id, cluster]));
    return services.flatMap((service) => {
      const cluster = byId.get(service.clusterId);
      return cluster ? [{ service, cluster }] : [];
    });
  }
}
