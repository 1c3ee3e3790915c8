/**
 * GitRepository → the server's repository of the same URL (Plural's gitrepository_controller.go): found by URL, so
 * a repository added by hand or another tool is adopted read-only. The URL is the repository's identity; credentials
 * come from `credentialsRef` (username/password, or privateKey and known_hosts) and are sent only on creation: the
 * server keeps them encrypted and has no way to replace them, so a new Secret means a new repository (delete and
 * re-create the resource).
 */
import { ApiError, type ApiRepository, type FleetClient } from '../client/fleet-client.ts';
import { GitRepositorySpecSchema, type GitRepositorySpec, type GitRepositoryStatus } from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import { type FleetKind, InvalidSpec } from './fleet-object.ts';
import { secretOf } from './references.ts';

interface DesiredRepository {
  attributes: { url: string };
  credentials?: { username?: string; password?: string; identity?: string; known_hosts?: string };
}

export function gitRepositoryKind(
  client: FleetClient,
  cluster: Cluster,
): FleetKind<GitRepositorySpec, GitRepositoryStatus, DesiredRepository, ApiRepository> {
  return {
    kind: 'GitRepository',
    schema: GitRepositorySpecSchema,
    async desired(resource) {
      const ref = resource.spec.credentialsRef;
      if (!ref) return { attributes: { url: resource.spec.url } };
      // A GitRepository is cluster-scoped, so it has no namespace of its own to confine its Secret to: only those
      // with cluster-wide rights make one, and its Secret is in the namespace it names.
      const secret = await secretOf(cluster, ref, ref.namespace ?? 'default', 'spec.credentialsRef');
      const { username, password, privateKey, known_hosts } = secret;
      if (!privateKey && !(username && password)) {
        throw new InvalidSpec(`Secret ${ref.name} (spec.credentialsRef) needs keys username and password, or privateKey`);
      }
      const credentials = privateKey ? { identity: privateKey, ...(known_hosts ? { known_hosts } : {}) } : { username, password };
      return { attributes: { url: resource.spec.url }, credentials };
    },
    find: async ({ attributes }) => await client.getRepository(attributes.url).catch(notFound),
    create: async ({ attributes, credentials }) =>
      await client.createRepository({ url: attributes.url, ...(credentials ? { credentials } : {}) }),
    // The URL is the identity (a new URL finds nothing and creates), and credentials cannot be replaced.
    update: async (remote) => remote,
    async remove(resource) {
      if (resource.status?.id) await client.deleteRepository(resource.status.id).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    observe: (remote) => ({
      status: { health: remote.health ?? undefined, message: remote.lastError ?? undefined },
      readiness:
        remote.health === 'FAILED'
          ? { ready: false, reason: 'Failed', message: remote.lastError ?? 'the server cannot fetch it' }
          : { ready: true, reason: remote.health === 'PULLABLE' ? 'Pullable' : 'Added', message: remote.url },
    }),
  };
}

/** undefined for a 404, so `find` and `remove` read "not there" plainly; any other error is thrown. */
export function notFound(error: unknown): undefined {
  if (error instanceof ApiError && error.status === 404) return undefined;
  throw error;
}
