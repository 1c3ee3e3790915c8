/**
 * New commits become revisions: after each fetch of a repository, every service sourced from it (its own folder or
 * one of its extra `sources`) resolves its refs again; when the folder's tarball changed, a revision by `git` is added, which its agent then applies.
 * A service pinned to a commit does not move, and content rejected for a service (server/rejections.ts) makes no
 * revision. A helm service whose valuesFiles come from the
 * repository gets its wrapper project rebuilt with the new values.
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { listRejections, rejectionsFor } from '../store/rejections.ts';
import { listServices, type ServiceRef, type ServiceUpdate, updateServices, waitingRevisions } from '../store/services.ts';
import { resolverForOnePass, type ServiceSources } from './service-sources.ts';
import { messageOf } from '../problems.ts';
import type { RolloutRunner } from './rollouts.ts';

export interface CommitTrackerOptions {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  log: Logger;
  onRevised: (service: ServiceRef) => void;
  /** Copies of a global service with a rollout get the commit wave by wave (absent: all at once, as in tests of the tracker alone). */
  rollouts?: Pick<RolloutRunner, 'begin' | 'evaluateAll'>;
}

/**
 * Brings every live service of `repositoryId` to its ref's newest commit; a service whose ref cannot be resolved is
 * logged and left as it is. The services a commit moves are updated together (updateServices): a commit to the
 * repository of a global service moves every one of its copies.
 */
export async function trackCommits(options: CommitTrackerOptions, repositoryId: string): Promise<void> {
  const services = await listServices(options.db, { repositoryId });
  // Rejections are of a service's own folder, whichever of its repositories moved (its extra sources too).
  const repositoryIds = [...new Set(services.flatMap((service) => service.spec.repositoryId ?? []))];
  const rejections = await listRejections(options.db, { repositoryIds });
  const resolve = resolverForOnePass(options.sources);
  const waiting = await waitingRevisions(options.db, services);
  const updates: ServiceUpdate[] = [];
  const owned: Array<{ ownerId: string; commit: string }> = [];
  for (const service of services) {
    if (service.deletedAt !== null) continue;
    try {
      const source = await resolve(service.spec);
      // A commit elsewhere in a monorepo leaves this folder's tarball as it was: no revision, nothing to apply. A pinned
      // service compares with the revision that waits for its release, which may have recorded this commit already.
      if (source.digest === (waiting.get(service.id)?.digest ?? service.revision.digest)) continue;
      // Rejected content never runs: the service waits for the next commit that changes its folder.
      if (rejectionsFor(rejections, service).some((rejection) => rejection.digest === source.digest)) continue;
      updates.push({ serviceId: service.id, changes: {}, source, author: { by: 'git', message: `commit ${source.commit.slice(0, 12)}` } });
      if (service.ownerId) owned.push({ ownerId: service.ownerId, commit: source.commit });
    } catch (error) {
      options.log.warn({ service: service.name, error: messageOf(error) }, 'cannot follow the service ref');
    }
  }
  try {
    const causes = Map.groupBy(owned, (entry) => entry.commit);
    const rolling = [];
    for (const [commit, services] of causes)
      rolling.push(...((await options.rollouts?.begin(services, `commit ${commit.slice(0, 12)}`)) ?? []));
    await updateServices(options.db, options.box, updates, options.onRevised);
    await options.rollouts?.evaluateAll(rolling);
  } catch (error) {
    // The next poll resolves these services again and retries.
    options.log.warn({ repository: repositoryId, error: messageOf(error) }, 'cannot record the new revisions');
  }
}
