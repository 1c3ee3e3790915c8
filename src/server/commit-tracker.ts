/**
 * New commits become revisions: after each fetch of a repository, every service sourced from it resolves its ref
 * again; when the folder's tarball changed, a revision by `git` is added, which its agent then applies.
 * A service pinned to a commit (after a rollback) does not move. A helm service whose valuesFiles come from the
 * repository gets its wrapper project rebuilt with the new values.
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';
import { listServices, type Service, updateService } from '../store/services.ts';
import { resolverForOnePass, type ServiceSources } from './service-sources.ts';

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
  const resolve = resolverForOnePass(options.sources);
  for (const service of services) {
    if (service.deletedAt !== null) continue;
    try {
      const source = await resolve(service.spec);
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
