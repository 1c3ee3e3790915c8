/**
 * Where a KluctlDeployment's project comes from: a git repository (`spec.source.git`, or the deprecated
 * `spec.source.url/ref/path`) through the shared git cache, with the first matching `spec.credentials.git` entry's
 * Secret; an OCI artifact pushed by `kluctl oci push` or `gantry oci push` (`spec.source.oci`) through the shared
 * OCI cache, with the first matching `spec.credentials.oci` entry's Secret (kluctl's docs/gitops/spec/v1beta1/
 * kluctldeployment.md, "OCI source" and "OCI registry authentication"); or the artifact of a Flux GitRepository or
 * OCIRepository (`spec.sourceRef`).
 */
import path from 'node:path';
import type { KluctlDeployment } from '../../api/kluctl-deployment.ts';
import type { Cluster } from '../../kube/cluster.ts';
import { readSecret } from '../../kube/secrets.ts';
import { isDirectory, resolveInside } from '../../files.ts';
import { FLUX_SOURCE_KINDS, fetchFluxArtifact, type FluxSourceKind } from '../../source/flux-artifact.ts';
import type { GitCache } from '../../source/git-cache.ts';
import { matchCredentials, prepareGitAccess } from '../../source/git-credentials.ts';
import type { OciCache } from '../../source/oci-cache.ts';
import { credentialsFromSecret, RegistryCredentials } from '../../source/oci-credentials.ts';
import { messageOf } from '../../problems.ts';

export interface ResolvedSource {
  /** Folder of the Kluctl project. */
  projectDir: string;
  /** The commit (git), `<tag>@sha256:<hex>` (OCI, as Flux writes OCI revisions) or Flux revision the files come from. */
  revision: string;
  /** Identifies the project: repository and path (Kluctl's projectKey). */
  projectKey: { repoKey: string; subDir: string };
}

/** `repoKey@revision/subDir`: where the project's files come from, for messages (e.g. 127.0.0.1/org/repo@1a2b3c4d5e6f/apps). */
export function sourceLabel(source: ResolvedSource): string {
  const revision = /^[0-9a-f]{40}$/.test(source.revision) ? source.revision.slice(0, 12) : source.revision;
  const { repoKey, subDir } = source.projectKey;
  return `${repoKey}@${revision}${subDir ? `/${subDir}` : ''}`;
}

export interface SourceDeps {
  cluster: Cluster;
  git: GitCache;
  oci: OciCache;
  /** The deployment's spec.credentials.oci (see registryCredentialsOf). */
  registries: RegistryCredentials;
  /** Where Flux artifacts are unpacked. */
  artifactsDir: string;
  /** Abandons fetching: git is killed, downloads aborted. */
  signal?: AbortSignal;
}

/** The git URL of a deployment's source, if it is a git source (what webhooks match against). */
export function gitUrlOf(deployment: Pick<KluctlDeployment, 'spec'>): string | undefined {
  return deployment.spec.source?.git?.url ?? deployment.spec.source?.url;
}

/**
 * The project's folder in a sourceRef's artifact: `sourceRef.path` (Gantry's spelling) or `path` (the Flux Kluctl
 * controller's). @throws Error when both are set and differ.
 */
function sourceRefPath(spec: KluctlDeployment['spec']): string | undefined {
  const ours = spec.sourceRef?.path;
  if (ours !== undefined && spec.path !== undefined && ours !== spec.path)
    throw new Error(`spec.path (${spec.path}) and spec.sourceRef.path (${ours}) name different folders: set one of them`);
  return ours ?? spec.path;
}

/**
 * Fetches the project's files.
 * @throws Error naming the repository (or GitRepository) that cannot be fetched, the ref that does not exist, the
 *   credentials Secret that is missing, or the path that is not in the source.
 */
export async function resolveSource(deployment: KluctlDeployment, deps: SourceDeps): Promise<ResolvedSource> {
  const { spec, metadata } = deployment;
  if (spec.sourceRef) {
    const { kind, name } = spec.sourceRef;
    if (!FLUX_SOURCE_KINDS.includes(kind as FluxSourceKind))
      throw new Error(`sourceRef kind ${kind} is not supported (only ${FLUX_SOURCE_KINDS.join(' and ')})`);
    const subDir = sourceRefPath(spec);
    const namespace = spec.sourceRef.namespace ?? metadata.namespace;
    const artifact = await fetchFluxArtifact(
      deps.cluster,
      { kind: kind as FluxSourceKind, namespace, name },
      deps.artifactsDir,
      deps.signal,
    );
    return {
      projectDir: await projectFolder(artifact.dir, subDir),
      revision: artifact.revision,
      projectKey: { repoKey: `flux:${namespace}/${spec.sourceRef.name}`, subDir: subDir ?? '' },
    };
  }
  if (spec.path !== undefined) throw new Error('spec.path goes with spec.sourceRef; with spec.source, the folder is spec.source.git.path');
  if (spec.source?.oci) return resolveOciSource(spec.source.oci, deps);
  if (spec.source?.secretRef || spec.source?.credentials)
    throw new Error(
      'spec.source.secretRef and spec.source.credentials are deprecated and refused (as in Kluctl): use spec.credentials.git',
    );
  const url = gitUrlOf(deployment);
  if (!url) throw new Error('spec.source.git.url (or spec.sourceRef) is required');
  const ref = spec.source?.git?.ref ?? spec.source?.ref ?? {};
  const subDir = spec.source?.git?.path ?? spec.source?.path ?? '';
  const credentials = matchCredentials(url, spec.credentials?.git ?? []);
  const access = credentials ? await gitAccessFrom(deps.cluster, metadata.namespace, credentials.secretRef.name, url) : undefined;
  try {
    const checkout = await deps.git.checkout(url, ref, access, deps.signal);
    return { projectDir: await projectFolder(checkout.dir, subDir), revision: checkout.commit, projectKey: { repoKey: url, subDir } };
  } finally {
    await access?.cleanup();
  }
}

/** The artifact `spec.source.oci` names (pulled with the deployment's OCI credentials) and the project's folder in it. */
async function resolveOciSource(
  oci: NonNullable<NonNullable<KluctlDeployment['spec']['source']>['oci']>,
  deps: SourceDeps,
): Promise<ResolvedSource> {
  const snapshot = await deps.oci.pull(oci.url, oci.ref, deps.registries, deps.signal);
  const subDir = oci.path ?? '';
  return {
    projectDir: await projectFolder(snapshot.dir, subDir),
    revision: oci.ref?.digest ? snapshot.digest : `${oci.ref?.tag ?? 'latest'}@${snapshot.digest}`,
    projectKey: { repoKey: oci.url, subDir },
  };
}

/**
 * The registry credentials of `spec.credentials.oci`, in its order, each from its Secret in the deployment's namespace.
 * @throws Error naming the entry and the Secret that is missing or the entry without a registry.
 */
export async function registryCredentialsOf(
  deployment: Pick<KluctlDeployment, 'spec' | 'metadata'>,
  cluster: Cluster,
): Promise<RegistryCredentials> {
  const namespace = deployment.metadata.namespace;
  const entries = await Promise.all(
    (deployment.spec.credentials?.oci ?? []).map(async (entry, index) => {
      try {
        return credentialsFromSecret(entry, await readSecret(cluster, namespace, entry.secretRef.name));
      } catch (error) {
        throw new Error(`spec.credentials.oci[${index}]: ${messageOf(error)}`);
      }
    }),
  );
  return new RegistryCredentials(entries);
}

async function projectFolder(root: string, subDir: string | undefined): Promise<string> {
  const dir = path.resolve(root, subDir ?? '.');
  await resolveInside(root, subDir ?? '.', { label: 'spec.source path', root: 'the source' });
  if (!(await isDirectory(dir))) throw new Error(`path '${subDir}' does not exist in the source`);
  return dir;
}

/** The git access the credentials Secret `name` gives; errors name the Secret and the repository. */
async function gitAccessFrom(cluster: Cluster, namespace: string, name: string, url: string) {
  try {
    return await prepareGitAccess(await readSecret(cluster, namespace, name));
  } catch (error) {
    throw new Error(`credentials Secret ${namespace}/${name} for ${url}: ${messageOf(error)}`);
  }
}
