/**
 * The vars sources that read the target's cluster, as kluctl's variable-sources docs and vars loader define them:
 * - clusterConfigMap / clusterSecret: one key of a ConfigMap or Secret (found by name or by labels), rendered as a
 *   template with the vars loaded before it and parsed as YAML; Secret data is base64-decoded, and Secrets are
 *   sensitive;
 * - clusterObject: the value at a JSON path of any object (or, with `list`, of every object matching labels),
 *   optionally rendered and parsed as YAML; sensitive.
 * The objects must exist before the project is loaded; none of these work offline.
 */
import type { Cluster } from '../../kube/cluster.ts';
import type { ApiResource } from '../../kube/discovery.ts';
import { formatRef, refOf, splitApiVersion, type KubeObject } from '../../kube/object.ts';
import type { VarsSourceClusterMap, VarsSourceClusterObject } from '../schema.ts';
import { isPlainObject } from '../../values.ts';
import { readDigest } from '../render-inputs.ts';
import { parseTargetPath, placeAtPath, queryJsonPath } from './json-path.ts';
import { parseVarsText, renderWithContext, type LoadedVars, type SourceRequest } from './source.ts';
import { messageOf } from '../../problems.ts';

/**
 * Loads `key` of the ConfigMap or Secret named by `config`.
 * @returns undefined when the object or key is missing and ignoreMissing is set.
 * @throws Error naming the source and object: offline, not found, several objects match the labels, a template
 *   error, invalid YAML.
 */
export async function loadClusterMap(
  config: VarsSourceClusterMap,
  kind: 'ConfigMap' | 'Secret',
  request: SourceRequest,
): Promise<LoadedVars | undefined> {
  const source = kind === 'ConfigMap' ? 'clusterConfigMap' : 'clusterSecret';
  const cluster = requireCluster(request, source);
  const label = `${request.label}: ${source}`;
  checkNameOrLabels(config, label);
  const resource = await fromCluster(label, cluster.resourceFor({ group: '', version: 'v1', kind }));
  const objects = await findObjects(cluster, resource, { namespace: config.namespace, name: config.name, labels: config.labels }, label);
  if (objects.length > 1)
    throw new Error(
      `${label}: more than one ${kind} matches labels ${selectorOf(config.labels)}: ${objects.map((object) => object.metadata.name).join(', ')}`,
    );
  const object = objects[0];
  if (kind === 'ConfigMap') await recordConfigMapRead(cluster, resource, config, object, request);
  if (!object) {
    if (request.ignoreMissing) return undefined;
    throw new Error(`${label}: ${describeWanted(kind, config)} not found on the cluster`);
  }
  const ref = formatRef(refOf(object));
  const data = isPlainObject(object['data']) ? object['data'] : {};
  const raw = data[config.key];
  if (typeof raw !== 'string') {
    if (request.ignoreMissing) return undefined;
    throw new Error(`${label}: key '${config.key}' not found in ${ref}`);
  }
  const text = kind === 'Secret' ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  const name = `${ref}[${config.key}]`;
  const rendered = (await renderWithContext(text, request, name)) as string;
  const parsed = parseVarsText(rendered, name, request.multidoc);
  const value = config.targetPath === undefined ? parsed : placeAtPath(parseTargetPath(config.targetPath), parsed, {}, config.targetPath);
  return { value, sensitive: kind === 'Secret' };
}

/**
 * Loads the value at `config.path` of the object(s) named by `config`.
 * @returns undefined when no object matches, or the path selects nothing, and ignoreMissing is set.
 * @throws Error naming the source: offline, an unknown or ambiguous kind, no or several matching objects (without
 *   `list`), a path selecting nothing or several values, a non-string value with `parseYaml`.
 */
export async function loadClusterObject(config: VarsSourceClusterObject, request: SourceRequest): Promise<LoadedVars | undefined> {
  const cluster = requireCluster(request, 'clusterObject');
  const label = `${request.label}: clusterObject`;
  checkNameOrLabels(config, label);
  const resource = await resourceOfKind(cluster, config, label);
  if (resource.namespaced && config.name && !config.namespace)
    throw new Error(`${label}: 'namespace' is required to find a namespaced ${config.kind} by name`);
  const objects = await findObjects(cluster, resource, { namespace: config.namespace, name: config.name, labels: config.labels }, label);
  objects.sort((a, b) => formatRef(refOf(a)).localeCompare(formatRef(refOf(b))));
  if (objects.length === 0) {
    if (request.ignoreMissing) return undefined;
    throw new Error(`${label}: ${describeWanted(config.kind, config)} not found on the cluster`);
  }
  if (objects.length > 1 && !config.list) {
    throw new Error(
      `${label}: more than one ${config.kind} matches (${objects.map((object) => formatRef(refOf(object))).join(', ')}); set 'list: true' to load them all`,
    );
  }
  const values: unknown[] = [];
  for (const object of objects) {
    const ref = formatRef(refOf(object));
    const matches = queryJsonPath(object, config.path);
    if (matches.length === 0) {
      if (request.ignoreMissing) return undefined;
      throw new Error(`${label}: path '${config.path}' selects nothing in ${ref}`);
    }
    if (matches.length > 1)
      throw new Error(`${label}: path '${config.path}' selects ${matches.length} values in ${ref}; it must select one`);
    let value = matches[0];
    if (config.render) value = await renderWithContext(value, request, `${ref} ${config.path}`);
    if (config.parseYaml) {
      if (typeof value !== 'string') throw new Error(`${label}: path '${config.path}' of ${ref} is not a string, but parseYaml is set`);
      value = parseVarsText(value, `${ref} ${config.path}`, false);
    }
    values.push(value);
  }
  return { value: config.list ? values : values[0], sensitive: true };
}

/**
 * Records the read of a ConfigMap found by name, or its absence, so a later run reuses the render only while it
 * reads the same (target/render-cache.ts); a ConfigMap found by labels could be another one then, so it forbids reuse.
 */
async function recordConfigMapRead(
  cluster: Cluster,
  resource: ApiResource,
  config: VarsSourceClusterMap,
  object: KubeObject | undefined,
  request: SourceRequest,
): Promise<void> {
  const { inputs } = request.scope.environment;
  if (!inputs) return;
  if (!config.name) return inputs.cannotReuse(`${request.label}: a clusterConfigMap vars source found by labels`);
  const ref = { group: '', version: resource.version, kind: resource.kind, namespace: config.namespace ?? '', name: config.name };
  inputs.recordRead({ path: await cluster.objectPath(ref), accept: 'application/json', digest: readDigest(object ? 200 : 404, object) });
}

function requireCluster(request: SourceRequest, source: string): Cluster {
  const { cluster } = request.scope.environment;
  if (!cluster) throw new Error(`${request.label}: ${source} needs the target's cluster, and rendering is offline (--offline-kubernetes)`);
  return cluster;
}

function checkNameOrLabels(config: { name?: string | undefined; labels?: Record<string, string> | undefined }, label: string): void {
  const hasLabels = Object.keys(config.labels ?? {}).length > 0;
  if (!config.name && !hasLabels) throw new Error(`${label}: either 'name' or 'labels' must be set`);
  if (config.name && hasLabels) throw new Error(`${label}: only one of 'name' or 'labels' can be set`);
}

/** The served resource for `kind` (with `apiVersion`, exactly that one; else the kind's only preferred version). */
async function resourceOfKind(cluster: Cluster, config: VarsSourceClusterObject, label: string): Promise<ApiResource> {
  if (config.apiVersion) return fromCluster(label, cluster.resourceFor({ ...splitApiVersion(config.apiVersion), kind: config.kind }));
  const matching = (await fromCluster(label, cluster.discovery.resources())).filter(
    (resource) => resource.preferred && resource.kind === config.kind,
  );
  const [only, ...others] = matching;
  if (!only) throw new Error(`${label}: the cluster serves no resource of kind ${config.kind}`);
  if (others.length > 0) {
    const versions = matching.map((resource) => (resource.group ? `${resource.group}/${resource.version}` : resource.version));
    throw new Error(`${label}: more than one resource has kind ${config.kind} (${versions.join(', ')}); set 'apiVersion'`);
  }
  return only;
}

interface Wanted {
  namespace: string | undefined;
  name: string | undefined;
  labels: Record<string, string> | undefined;
}

/** The object called `name`, or every object matching `labels` (in all namespaces without one). */
async function findObjects(cluster: Cluster, resource: ApiResource, wanted: Wanted, label: string): Promise<KubeObject[]> {
  const namespace = resource.namespaced ? wanted.namespace || undefined : undefined;
  if (wanted.name) {
    const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    const ref = { ...splitApiVersion(apiVersion), kind: resource.kind, namespace: namespace ?? '', name: wanted.name };
    const object = await fromCluster(label, cluster.get(ref));
    return object ? [{ ...object, apiVersion, kind: resource.kind }] : [];
  }
  return fromCluster(label, cluster.list(resource, selectorOf(wanted.labels), namespace));
}

/** Prefixes the source's label to the cluster's own errors (unreachable, forbidden, unknown kind). */
async function fromCluster<T>(label: string, call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw new Error(`${label}: ${messageOf(error)}`);
  }
}

function selectorOf(labels: Record<string, string> | undefined): string {
  return Object.entries(labels ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

function describeWanted(
  kind: string,
  wanted: { namespace?: string | undefined; name?: string | undefined; labels?: Record<string, string> | undefined },
): string {
  const where = wanted.namespace ? ` in namespace ${wanted.namespace}` : '';
  return wanted.name ? `${kind} ${wanted.name}${where}` : `${kind} with labels ${selectorOf(wanted.labels)}${where}`;
}
