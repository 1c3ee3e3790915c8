/**
 * New chart versions become revisions: on every round of the repository poller, each live helm service whose
 * version is a range resolves it again; when it now picks a newer version, the chart is pulled, the wrapper
 * project packed and a revision by `helm` added, which its agent then applies (Plural re-resolves helm
 * services' versions on its poll the same way). Exact versions never move and are not looked at. Copies of a global
 * service with a rollout get the version wave by wave (server/rollouts.ts), as a commit reaches them; a version its
 * last rollout rolled back is not recorded again, and the next version flows as usual.
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { rolledBackContent } from '../store/rollouts.ts';
import { type HelmSpec, listServices, type ServiceRef, type ServiceUpdate, updateServices, waitingRevisions } from '../store/services.ts';
import { isExactVersion } from './helm-sources.ts';
import { resolverForOnePass, type ServiceSources } from './service-sources.ts';
import { messageOf } from '../problems.ts';
import type { RolloutRunner } from './rollouts.ts';

export interface ChartTrackerOptions {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  log: Logger;
  onRevised: (service: ServiceRef) => void;
  /** Whether this replica follows the chart repository at `url` (replica-set.ts): one replica per repository. */
  owns: (url: string) => boolean;
  /** Copies of a global service with a rollout get the version wave by wave (absent: all at once). */
  rollouts?: Pick<RolloutRunner, 'begin' | 'evaluateAll'>;
}

/**
 * Brings every helm service with a version range to its newest matching chart version; failures are logged per
 * service. The services a new version moves are updated together (updateServices): a global service's copies all
 * follow one chart.
 */
export async function trackCharts(options: ChartTrackerOptions): Promise<void> {
  const services = await listServices(options.db);
  const resolve = resolverForOnePass(options.sources);
  const chartVersion = memoized(
    (helm: HelmSpec) => JSON.stringify([helm.url, helm.chart, helm.version]),
    (helm) => options.sources.chartVersion(helm),
  );
  const waiting = await waitingRevisions(options.db, services);
  const rolledBack = memoized(
    (ownerId: string) => ownerId,
    (ownerId) => rolledBackContent(options.db, ownerId),
  );
  const updates: ServiceUpdate[] = [];
  const owned: Array<{ ownerId: string; cause: string }> = [];
  for (const service of services) {
    const helm = service.spec.helm;
    if (!helm || isExactVersion(helm.version) || service.deletedAt !== null || !options.owns(helm.url)) continue;
    try {
      const version = await chartVersion(helm);
      // A pinned service compares with the revision that waits for its release, which may have this version already.
      if (version === (waiting.get(service.id)?.chartVersion ?? service.revision.chartVersion)) continue;
      if (service.ownerId && (await rolledBack(service.ownerId)).chartVersions.has(version)) continue;
      const source = await resolve(service.spec);
      const cause = `chart ${helm.chart} ${source.chartVersion}`;
      updates.push({ serviceId: service.id, changes: {}, source, author: { by: 'helm', message: cause } });
      if (service.ownerId) owned.push({ ownerId: service.ownerId, cause });
    } catch (error) {
      options.log.warn({ service: service.name, chart: helm.chart, error: messageOf(error) }, 'cannot follow the chart version');
    }
  }
  try {
    const rolling = [];
    for (const [cause, copies] of Map.groupBy(owned, (entry) => entry.cause))
      rolling.push(...((await options.rollouts?.begin(copies, cause)) ?? []));
    await updateServices(options.db, options.box, updates, options.onRevised);
    await options.rollouts?.evaluateAll(rolling);
  } catch (error) {
    // The next round resolves these services again and retries.
    options.log.warn({ error: messageOf(error) }, 'cannot record the new chart versions');
  }
}

/** `load` called once per `keyOf` its argument, for one round. */
function memoized<A, T>(keyOf: (argument: A) => string, load: (argument: A) => Promise<T>): (argument: A) => Promise<T> {
  const loaded = new Map<string, Promise<T>>();
  return (argument) => {
    const key = keyOf(argument);
    const value = loaded.get(key) ?? load(argument);
    loaded.set(key, value);
    return value;
  };
}
