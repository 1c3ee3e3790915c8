/**
 * A Flux GitRepository (source.toolkit.fluxcd.io/v1) as a ServiceDeployment's repositoryRef, as Plural's operator
 * interoperates with Flux sources: its `url`, `ref` and `secretRef` are used, and the server gets a repository of
 * that URL (with the Secret's credentials) unless it has one. Nothing of the Flux object is changed, and the server
 * repository stays when the Flux object goes (other services may use it; `gantry repo delete` removes it). A Flux
 * HelmRepository as a service's `helm.repository` gives the chart repository's URL.
 */
import type { ObjectReference } from '../api/fleet.ts';
import type { FleetClient } from '../client/fleet-client.ts';
import type { Cluster } from '../kube/cluster.ts';
import { FLUX_SOURCE_GROUP } from '../source/flux-artifact.ts';
import { InvalidSpec, Waiting } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { referencedNamespace, secretOf } from './references.ts';

/** The Flux GitRepository spec fields the operator reads (Flux's GitRepositorySpec). */
interface FluxGitRepositorySpec {
  url: string;
  ref?: { branch?: string; tag?: string; semver?: string; name?: string; commit?: string };
  secretRef?: { name: string };
}

/** Whether `ref` names a Flux GitRepository rather than Gantry's. */
export function isFluxRef(ref: ObjectReference): boolean {
  return ref.apiVersion?.split('/')[0] === FLUX_SOURCE_GROUP;
}

/**
 * The server repository of the Flux GitRepository `ref` names, registered now when missing, and the git ref its
 * spec.ref gives (commit, then name, then tag, then branch, as Flux picks; none: `master`, Flux's default).
 * @throws Waiting when the Flux object or its Secret does not exist (yet); InvalidSpec for a semver ref or a Secret
 * without usable keys.
 */
export async function fluxRepository(
  cluster: Cluster,
  client: FleetClient,
  ref: ObjectReference,
  namespace: string,
): Promise<{ repository: string; ref: string }> {
  const ns = referencedNamespace(cluster, ref, namespace, 'spec.repositoryRef');
  const object = await cluster.get({ group: FLUX_SOURCE_GROUP, version: 'v1', kind: 'GitRepository', namespace: ns, name: ref.name });
  if (!object) throw new Waiting(`Flux GitRepository ${ns}/${ref.name} (spec.repositoryRef) not found`);
  const spec = object['spec'] as FluxGitRepositorySpec;
  if (spec.ref?.semver && !spec.ref.commit && !spec.ref.name) {
    throw new InvalidSpec(`Flux GitRepository ${ns}/${ref.name}: a semver ref is not followed by services; give spec.git.ref`);
  }
  // A Flux `name` is a full reference (refs/heads/main, refs/tags/v1); the server takes the short name.
  const name = spec.ref?.name?.replace(/^refs\/(heads|tags)\//, '');
  const gitRef = spec.ref?.commit ?? name ?? spec.ref?.tag ?? spec.ref?.branch ?? 'master';
  const existing = await client.getRepository(spec.url).catch(notFound);
  if (existing) return { repository: existing.id, ref: gitRef };
  const credentials = spec.secretRef
    ? fluxCredentials(await secretOf(cluster, spec.secretRef, ns, `Flux GitRepository ${ns}/${ref.name} secretRef`), spec.secretRef.name)
    : undefined;
  const created = await client.createRepository({ url: spec.url, ...(credentials ? { credentials } : {}) });
  return { repository: created.id, ref: gitRef };
}

/** Flux's git Secret keys (username/password, or identity/known_hosts) as the server's credentials. */
function fluxCredentials(secret: Record<string, string>, name: string) {
  if (secret['identity']) return { identity: secret['identity'], ...(secret['known_hosts'] ? { known_hosts: secret['known_hosts'] } : {}) };
  if (secret['username'] && secret['password']) return { username: secret['username'], password: secret['password'] };
  throw new InvalidSpec(`Secret ${name} of the Flux GitRepository needs username and password, or identity`);
}

/**
 * The chart repository URL of the Flux HelmRepository a service's `helm.repository` names, as Plural's console
 * resolves it (its `spec.url`: https:// or, for `type: oci`, oci://).
 * @throws Waiting when it does not exist (yet); InvalidSpec when it needs credentials (`secretRef`), which the server
 * cannot use for charts yet.
 */
export async function fluxHelmRepositoryUrl(
  cluster: Cluster,
  ref: { name: string; namespace?: string },
  namespace: string,
): Promise<string> {
  const ns = referencedNamespace(cluster, ref, namespace, 'spec.helm.repository');
  const object = await cluster.get({ group: FLUX_SOURCE_GROUP, version: 'v1', kind: 'HelmRepository', namespace: ns, name: ref.name });
  if (!object) throw new Waiting(`Flux HelmRepository ${ns}/${ref.name} (spec.helm.repository) not found`);
  const spec = object['spec'] as { url: string; secretRef?: { name: string } };
  if (spec.secretRef)
    throw new InvalidSpec(
      `Flux HelmRepository ${ns}/${ref.name} has a secretRef: chart repositories with credentials are not supported yet`,
    );
  return spec.url;
}
