/**
 * New chart versions become revisions: on every round of the repository poller, each live helm service whose
 * version is a range resolves it again; when it now picks a newer version, the chart is pulled, the wrapper
 * project packed and a revision by `helm` added, which its agent then applies (Plural re-resolves helm
 * services' versions on its poll the same way). Exact versions never move and are not looked at.
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { type HelmSpec, listServices, type ServiceRef, type ServiceUpdate, updateServices } from '../store/services.ts';
import { isExactVersion } from './helm-sources.ts';
import { resolverForOnePass, type ServiceSources } from './service-sources.ts';
import { messageOf } from '../problems.ts';

export interface ChartTrackerOptions {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  log: Logger;
  onRevised: (service: ServiceRef) => void;
  /** Whether this replica follows the chart repository at `url` (replica-set.ts): one replica per repository. */
  owns: (url: string) => boolean;
}

/**
 * Brings every helm service with a version range to its newest matching chart version; failures are logged per
 * service. The services a new version moves are updated together (updateServices): a global service's copies all
 * follow one chart.
 */
export async function trackCharts(options: ChartTrackerOptions): Promise<void> {
  const services = await listServices(options.db);
  const resolve = resolverForOnePass(options.sources);
  const versions = new Map<string, Promise<string>>();
  const chartVersion = (helm: HelmSpec) => {
    const key = JSON.stringify([helm.url, helm.chart, helm.version]);
    const version = versions.get(key) ?? options.sources.chartVersion(helm);
    versions.set(key, version);
    return version;
  };
  const updates: ServiceUpdate[] = [];
  for (const service of services) {
    const helm = service.spec.helm;
    if (!helm || isExactVersion(helm.version) || service.deletedAt !== null || !options.owns(helm.url)) continue;
    try {
      if ((await chartVersion(helm)) === service.revision.chartVersion) continue;
      const source = await resolve(service.spec);
      updates.push({
        serviceId: service.id,
        changes: {},
        source,
        author: { by: 'helm', message: `chart ${helm.chart} ${source.chartVersion}` },
      });
    } catch (error) {
      options.log.warn({ service: service.name, chart: helm.chart, error: messageOf(error) }, 'cannot follow the chart version');
    }
  }
  await updateServices(options.db, options.box, updates, options.onRevised).catch((error: Error) => {
    // The next round resolves these services again and retries.
    options.log.warn({ error: error.message }, 'cannot record the new chart versions');
  });
}
