/**
 * Command results kept in the cluster, as Kluctl keeps them: one Secret per result in a results namespace, its
 * document gzip-compressed, labelled by project, target (name and discriminator) and command, and only the newest
 * `keep` per project and target kept. The GitOps controller and later runs read them back; secrets' values never
 * appear in a result (diffs are obfuscated before they get here).
 */
import { createHash, randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { KubeApiError } from '../kube/client.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import type { CommandInfo } from '../api/kluctl-deployment.ts';
import type { CommandResult } from './result.ts';
import { messageOf } from '../problems.ts';

export const DEFAULT_RESULTS_NAMESPACE = 'gantry-results';
const LABEL_PREFIX = 'gantry.dev/result';
/** The command's start time (ISO 8601, milliseconds), which orders results. */
const START_TIME_ANNOTATION = 'gantry.dev/result-start-time';

/** Whose results are kept together: a project, and a target by its name and discriminator. */
export interface ResultKey {
  projectKey: string;
  target: string;
  discriminator: string;
}

/** A kept result: which project, which command on which target, and the result itself. */
export interface StoredResult {
  /** Identifies the project: its folder, or its git URL and path. */
  projectKey: string;
  commandInfo: CommandInfo;
  result: CommandResult;
}

export interface StoreOptions {
  namespace: string;
  /** How many results of the same project and target to keep, at least 1 (older ones are deleted). */
  keep: number;
  fieldManager: string;
}

/**
 * Writes `result` into a new Secret and deletes the project/target's results beyond the newest `keep`; the result
 * just written is never among them.
 * @returns the Secret's name.
 * @throws Error when `keep` is not an integer of at least 1 (nothing is written then).
 */
export async function writeCommandResult(cluster: Cluster, stored: StoredResult, options: StoreOptions): Promise<string> {
  if (!Number.isInteger(options.keep) || options.keep < 1)
    throw new Error(`results to keep must be a whole number of at least 1, not ${options.keep}`);
  const { target, discriminator } = stored.commandInfo;
  const labels = resultLabels({ projectKey: stored.projectKey, target, discriminator });
  const name = `${stored.commandInfo.command}-${stored.commandInfo.startTime.replace(/[^0-9]/g, '').slice(0, 14)}-${randomBytes(3).toString('hex')}`;
  const secret: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name,
      namespace: options.namespace,
      labels: { ...labels, [`${LABEL_PREFIX}-command`]: stored.commandInfo.command },
      annotations: { [START_TIME_ANNOTATION]: stored.commandInfo.startTime },
    },
    data: { 'result.json.gz': gzipSync(JSON.stringify(stored)).toString('base64') },
  };
  await applyMakingNamespace(cluster, secret, options);
  await pruneOldResults(cluster, labels, name, options);
  return name;
}

/**
 * Applies `secret`, making the results namespace first when the API server says it does not exist (the first
 * result, or someone deleted it): asking every time would be one more request for each result.
 */
async function applyMakingNamespace(cluster: Cluster, secret: KubeObject, options: StoreOptions): Promise<void> {
  try {
    await cluster.apply(secret, { fieldManager: options.fieldManager });
  } catch (error) {
    if (!(error instanceof KubeApiError && error.status === 404)) throw error;
    await cluster.apply(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: options.namespace } },
      { fieldManager: options.fieldManager },
    );
    await cluster.apply(secret, { fieldManager: options.fieldManager });
  }
}

/** The stored results of a project and target, newest first. */
export async function readCommandResults(cluster: Cluster, key: ResultKey, namespace: string): Promise<StoredResult[]> {
  const secrets = await listResults(cluster, resultLabels(key), namespace);
  return secrets.map(decodeResult);
}

/**
 * One stored result by its id (the Secret's name, which writeCommandResult returns and the controller records as
 * status.<kind>RequestResult.resultId).
 * @returns undefined when no such result exists (deleted as one of the oldest, or never written).
 * @throws Error naming the Secret when it holds no readable result.
 */
export async function readCommandResult(cluster: Cluster, namespace: string, resultId: string): Promise<StoredResult | undefined> {
  const secret = await cluster.get({ group: '', version: 'v1', kind: 'Secret', namespace, name: resultId });
  if (!secret) return undefined;
  try {
    return decodeResult(secret);
  } catch (error) {
    throw new Error(`${namespace}/Secret/${resultId}: not a stored command result (${messageOf(error)})`);
  }
}

function decodeResult(secret: KubeObject): StoredResult {
  const data = (secret['data'] as Record<string, string> | undefined)?.['result.json.gz'] ?? '';
  return JSON.parse(gunzipSync(Buffer.from(data, 'base64')).toString('utf8')) as StoredResult;
}

/**
 * Deletes all but the newest `keep` results; `written` counts as the newest whatever the clocks say. Their metadata
 * is all it reads: the compressed results stay on the server.
 */
async function pruneOldResults(cluster: Cluster, labels: Record<string, string>, written: string, options: StoreOptions): Promise<void> {
  const listed = await listResults(cluster, labels, options.namespace, { metadataOnly: true });
  const others = listed.filter((secret) => secret.metadata.name !== written);
  for (const secret of others.slice(options.keep - 1)) {
    await cluster.delete({ group: '', version: 'v1', kind: 'Secret', namespace: options.namespace, name: secret.metadata.name ?? '' });
  }
}

/**
 * Newest first: by the command's start time (milliseconds; a CLI runs several commands within one second, the
 * resolution of creationTimestamp), then by creation time for results written before the annotation existed.
 */
async function listResults(
  cluster: Cluster,
  labels: Record<string, string>,
  namespace: string,
  options: { metadataOnly?: boolean } = {},
): Promise<KubeObject[]> {
  const resource = await cluster.resourceFor({ group: '', version: 'v1', kind: 'Secret' });
  const selector = Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
  const secrets = await cluster.list(resource, selector, namespace, options);
  const started = (secret: KubeObject) => secret.metadata.annotations?.[START_TIME_ANNOTATION] ?? '';
  return secrets.sort(
    (a, b) =>
      started(b).localeCompare(started(a)) ||
      (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '') ||
      (b.metadata.name ?? '').localeCompare(a.metadata.name ?? ''),
  );
}

/**
 * Label values are limited to 63 characters of a restricted alphabet, so project and target are hashed. The target
 * is its name with its discriminator, as Kluctl's target key: the KluctlDeployments of one project and target name
 * told apart by their args deploy different objects, and each keeps its own newest results.
 */
function resultLabels(key: ResultKey): Record<string, string> {
  return {
    [`${LABEL_PREFIX}-project`]: shortHash(key.projectKey),
    [`${LABEL_PREFIX}-target`]: shortHash(key.discriminator ? `${key.target}\n${key.discriminator}` : key.target),
  };
}

function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 40);
}
