/**
 * HelmRepository → the server's Helm repository of the same URL (Plural's HelmRepository): with `auth.basic`, the
 * username and the password from its Secret, which the server seals and uses to list and pull the charts of every
 * service whose `helm.url` is this URL. Found by URL, so one registered elsewhere is adopted read-only. A change of
 * the Secret resyncs; the password never appears in status (only the sha of what was sent).
 */
import { createHash } from 'node:crypto';
import type { ApiHelmRepository, FleetClient } from '../client/fleet-client.ts';
import type { HelmRepositorySpec, HelmRepositoryStatus } from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { HelmRepositoryUpsertBody } from '../api/repositories.ts';
import { type FleetKind, InvalidSpec } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { secretOf } from './references.ts';

interface DesiredHelmRepository {
  /** The URL and a digest of the credentials. */
  attributes: { url: string; digest: string };
  body: HelmRepositoryUpsertBody;
}

export function helmRepositoryKind(
  client: FleetClient,
  cluster: Cluster,
): FleetKind<HelmRepositorySpec, HelmRepositoryStatus, DesiredHelmRepository, ApiHelmRepository> {
  const set = async ({ body }: DesiredHelmRepository) => await client.setHelmRepository(body);
  const sameUrl = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
  return {
    kind: 'HelmRepository',
    async desired(resource) {
      const { url, auth } = resource.spec;
      let body: HelmRepositoryUpsertBody = { url };
      if (auth?.basic) {
        const ref = auth.basic.passwordSecretRef;
        const key = ref.key ?? 'password';
        const secret = await secretOf(cluster, ref, resource.metadata.namespace ?? 'default', 'spec.auth.basic.passwordSecretRef');
        const password = secret[key];
        if (!password) throw new InvalidSpec(`Secret ${ref.name} (spec.auth.basic.passwordSecretRef) needs the key ${key}`);
        body = { url, username: auth.basic.username, password };
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
