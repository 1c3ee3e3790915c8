/**
 * The server's side of previews (issue 43, part 1): it resolves and packs the source a pending change would give a
 * service, records a preview (or reuses a DONE one with the same cache key: store/previews.ts), and kicks the
 * service's agent, which dry-runs it against its live cluster and reports. Three kinds of change come here: a
 * user's ref (`ofRef`), a pipeline edge's pending promotion and a global service's template edit (`ofChange`, called
 * by the pipeline runner and the global services with the spec and values they would give the service). A report
 * is recorded once (`reported`), and whoever asked is told (`onReported`: the pipeline runner evaluates the edge).
 */
import type { Kysely } from 'kysely';
import type { AgentService } from '../api/agent.ts';
import type { AgentPreview, PreviewReport } from '../api/previews.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { HttpError } from '../http/errors.ts';
import type { Cluster } from '../store/clusters.ts';
import { contextConfigurations } from '../store/service-contexts.ts';
import {
  createPreview,
  expirePreviews,
  finishPreview,
  getPreview,
  pendingPreviews,
  type Preview,
  previewKey,
  previewValues,
} from '../store/previews.ts';
import { pinnedSpec } from '../store/revisions.ts';
import type { Database } from '../store/schema.ts';
import type { Service, ServiceSecrets, ServiceSpec } from '../store/services.ts';
import { agentServices } from './agent-services.ts';
import type { ServiceSources } from './service-sources.ts';

export interface PreviewDeps {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  /** Kicks the service's agent: it lists its previews on the poll that follows. */
  onChange: (service: Service) => void;
  /** A preview an origin asked for has its result. Never throws. */
  onReported: (preview: Preview) => Promise<void>;
}

/** A change to preview: the spec and values the service would get, who or what asks, and the ref it shows as. */
export interface PreviewedChange {
  spec: ServiceSpec;
  /** The values it renders with; undefined: the service's own. */
  values?: ServiceSecrets;
  ref: string;
  requestedBy: string;
  origin?: string;
}

export class Previews {
  readonly #deps: PreviewDeps;

  constructor(deps: PreviewDeps) {
    this.#deps = deps;
  }

  /**
   * A preview of the service's source at `ref`: a branch, tag or commit for a git source, a chart version (or
   * range) for a helm source without git.
   * @throws HttpError 400 naming body.ref when it does not resolve.
   */
  async ofRef(service: Service, ref: string, requestedBy: string): Promise<Preview> {
    const { spec } = service;
    const moved: ServiceSpec = spec.git
      ? { ...spec, git: { ...spec.git, ref } }
      : spec.helm
        ? { ...spec, helm: { ...spec.helm, version: ref } }
        : spec;
    const fields = { repository: 'body.ref', ref: 'body.ref', folder: 'body.ref', helm: 'body.ref' };
    return await this.ofChange(service, { spec: moved, ref, requestedBy }, fields);
  }

  /**
   * A preview of the service with another spec and values: resolved and packed as an update would (no revision is
   * made), then recorded and its agent kicked, unless a DONE preview of the same (source, values, live state) is
   * still good.
   * @throws HttpError 400 when the source does not resolve (naming `fields`' paths).
   */
  async ofChange(
    service: Service,
    change: PreviewedChange,
    fields?: Record<'repository' | 'ref' | 'folder' | 'helm', string>,
  ): Promise<Preview> {
    await expirePreviews(this.#deps.db);
    const source = await this.#deps.sources.resolveSpec(change.spec, { fresh: true, ...(fields ? { fields } : {}) });
    const spec = pinnedSpec(change.spec, {
      commit: source.commit,
      chartVersion: source.chartVersion ?? null,
      sourceCommits: source.sourceCommits ?? null,
    });
    const { preview, created } = await createPreview(this.#deps.db, this.#deps.box, {
      serviceId: service.id,
      clusterId: service.clusterId,
      ref: change.ref,
      commit: source.commit,
      digest: source.digest,
      spec,
      ...(change.values ? { values: change.values } : {}),
      ...(change.origin ? { origin: change.origin } : {}),
      requestedBy: change.requestedBy,
      cacheKey: previewKey(service, source.digest, spec, change.values ?? null),
    });
    if (created) this.#deps.onChange(service);
    return preview;
  }

  /**
   * The agent's result for a preview of its cluster.
   * @throws HttpError 404 for another cluster's preview or none; 409 once it has a result.
   */
  async reported(cluster: Cluster, id: string, report: PreviewReport): Promise<void> {
    const preview = await getPreview(this.#deps.db, id).catch(() => undefined);
    if (!preview || preview.clusterId !== cluster.id) throw new HttpError(404, `this cluster has no preview ${id}`);
    if (!(await finishPreview(this.#deps.db, preview.id, report))) throw new HttpError(409, `preview ${preview.id} is done already`);
    if (preview.origin) await this.#deps.onReported({ ...preview, state: report.state, result: report.result });
  }

  /** The cluster's PENDING previews, each with its service as a sync would get it but at the preview's source. */
  async forAgent(cluster: Cluster): Promise<AgentPreview[]> {
    const pending = await pendingPreviews(this.#deps.db, cluster.id);
    if (pending.length === 0) return [];
    const services = new Map((await agentServices(this.#deps.db, this.#deps.box, cluster)).map((service) => [service.id, service]));
    const previews: AgentPreview[] = [];
    for (const preview of pending) {
      const service = services.get(preview.serviceId);
      if (service) previews.push({ id: preview.id, service: await this.#previewed(service, preview) });
    }
    return previews;
  }

  /** The service as its agent gets it, at the preview's source, spec and values. */
  async #previewed(service: AgentService, preview: Preview): Promise<AgentService> {
    const { spec } = preview;
    const values = preview.hasValues ? await previewValues(this.#deps.db, this.#deps.box, preview.id) : undefined;
    const contexts = spec.contexts ?? [];
    const { syncConfig: _current, renderers: _renderers, ...rest } = service;
    return {
      ...rest,
      revision: { id: preview.id, number: 0, commit: preview.commit, digest: preview.digest },
      // A helm service's tarball is the wrapper project, whatever folder its valuesFiles came from.
      folder: spec.helm ? '' : (spec.git?.folder ?? ''),
      renderer: spec.renderer,
      ...(spec.renderers ? { renderers: spec.renderers } : {}),
      templated: spec.templated !== false,
      contexts: await contextConfigurations(this.#deps.db, contexts),
      ...(values ? { configuration: values.configuration, secretValues: values.secretValues } : {}),
      ...(spec.syncConfig ? { syncConfig: spec.syncConfig } : {}),
    };
  }
}
