/**
 * Where a service's revision comes from, in one line: `folder @ ref` of its repository, `chart @ version`, or, for
 * the service holding a cluster's Cluster API objects, that cluster.
 */
import type { Revision, Service } from '../api/types.ts';

export function sourceText(source: Pick<Service, 'git' | 'helm' | 'provisions'> | Pick<Revision, 'git' | 'helm'>): string {
  if ('provisions' in source && source.provisions) return `Cluster API objects of ${source.provisions}`;
  if (source.helm) return `${source.helm.chart} @ ${source.helm.version}`;
  if (source.git) return `${source.git.folder || '/'} @ ${shortRef(source.git.ref)}`;
  return '—';
}

/** A commit sha shortened as git does; branch and tag names as they are. */
export function shortRef(ref: string): string {
  return /^[0-9a-f]{40}$/.test(ref) ? ref.slice(0, 7) : ref;
}
