/**
 * HelmRepository → the server's Helm repository of the same URL (Plural's HelmRepository): with `auth.basic`, the
 * username and the password from its Secret (`passwordSecretRef`, key `password` unless `key` says otherwise, or
 * `secretKeyRef`), which the server seals and uses to list and pull the charts of every service whose `helm.url` is
 * this URL. An oci:// registry is not registered yet (InvalidSpec). Found by URL, so one registered elsewhere is adopted read-only. A change of
 * the Secret resyncs; the password never appears in status (only the sha of what was sent).
 */
import { createHash } from 'node:crypto';
import type { ApiHelmRepository, FleetClient } from '../client/fleet-client.ts';
import { HelmRepositorySpecSchema, type HelmRepositorySpec, type HelmRepositoryStatus } from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { HelmRepositoryUpsertBody } from '../api/repositories.ts';
import { type FleetKind, InvalidSpec } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { secretKeyOf, secretOf } from './references.ts';

type BasicAuth = NonNullable<NonNullable<HelmRepositorySpec['auth']>['basic']>;

interface DesiredHelmRepository {
  /** The URL and a digest of the credentials. */
  attributes: { url: string; digest: string };
  body: HelmRepositoryUpsertBody;
}

export function helmRepositoryKind(
  client: FleetClient,
  cluster: Cluster,
): FleetKind<HelmRepositorySpec, HelmRepositoryStatus, DesiredHelmRepository, ApiHelmRepository> {
  /**
   * The password of basic auth: `secretKeyRef`'s key, or `passwordSecretRef`'s `key` (default password); undefined
   * when an optional secretKeyRef finds none.
   * @throws InvalidSpec when neither is given or the key is missing; Waiting for a missing Secret.
   */
  async function passwordOf(basic: BasicAuth, namespace: string): Promise<string | undefined> {
    if (basic.secretKeyRef) return await secretKeyOf(cluster, basic.secretKeyRef, namespace, 'spec.auth.basic.secretKeyRef');
    const ref = basic.passwordSecretRef;
    if (!ref) throw new InvalidSpec('spec.auth.basic needs passwordSecretRef or secretKeyRef');
    return await secretKeyOf(cluster, { ...ref, key: ref.key ?? 'password' }, namespace, 'spec.auth.basic.passwordSecretRef');
  }

  const set = async ({ body }: DesiredHelmRepository) => await client.setHelmRepository(body);
  const sameUrl = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
  return {
    kind: 'HelmRepository',
    schema: HelmRepositorySpecSchema,
    async desired(resource) {
      const { url, auth } = resource.spec;
      if (url.startsWith('oci://')) {
        throw new InvalidSpec(
          "spec.url: the server keeps credentials of Helm repositories (https://) only; an OCI registry's are not supported yet",
        );
      }
      let body: HelmRepositoryUpsertBody = { url };
      if (auth?.basic) {
        const password = await passwordOf(auth.basic, resource.metadata.namespace ?? 'default');
        if (password !== undefined) body = { url, username: auth.basic.username, password };
      }
      return { attributes: { url, digest: createHash('sha256').update(JSON.stringify(body)).digest('hex') }, body };
    },
    find: async ({ attributes }) => (await client.listHelmRepositories()).find((repository) => sameUrl(repository.url, attributes.url)),
    create: set,
    update: async (_remote, desired) => await set(desired),
    async remove(resource) {
      if (resource.status?.id) await client.deleteHelmRepository(resource.status.id).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    observe: (remote) => ({
      status: {},
      readiness: { ready: true, reason: 'Synced', message: `${remote.url}${remote.authenticated ? ' with credentials' : ''}` },
    }),
  };
}
