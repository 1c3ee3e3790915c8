/**
 * New commits become revisions: after each fetch of a repository, every service sourced from it resolves its ref
 * again; when the folder's tarball changed, a revision by `git` is added, which its agent then applies.
 * A service pinned to a commit (after a rollback) does not move.
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';
import { listServices, type ResolvedSource, type Service, updateService } from '../store/services.ts';
import type { ServiceSources } from './service-sources.ts';

export interface CommitTrackerOptions {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  log: Logger;
  onRevised: (service: Service) => void;
}

/** Brings every live service of `repositoryId` to its ref's newest commit; failures are logged per service. */
export async function trackCommits(options: CommitTrackerOptions, repositoryId: string): Promise<void> {
  const services = await listServices(options.db, { repositoryId });
  // Many services share a ref and folder (a global service's copies: one per cluster); each pair is checked out
  // and packed once per pass, not once per service (10,000 copies were 10,000 git checkouts after every fetch).
  const resolved = new Map<string, Promise<ResolvedSource>>();
  const resolve = (git: { ref: string; folder: string }) => {
    const key = JSON.stringify([git.ref, git.folder]);
    const source = resolved.get(key) ?? options.sources.resolve(repositoryId, git);
    resolved.set(key, source);
    return source;
  };
  for (const service of services) {
    if (service.deletedAt !== null) continue;
    try {
      const source = await resolve(service.spec.git);
      // A commit elsewhere in a monorepo leaves this folder's tarball as it was: no revision, nothing to apply.
      if (source.digest === service.revision.digest) continue;
      const { service: updated, revised } = await updateService(options.db, options.box, service.id, {}, source, {
        by: 'git',
        message: `commit ${source.commit.slice(0, 12)}`,
      });
      if (revised) options.onRevised(updated);
    } catch (error) {
      options.log.warn(
        { service: service.name, error: error instanceof Error ? error.message : String(error) },
        'cannot follow the service ref',
      );
    }
  }
}
