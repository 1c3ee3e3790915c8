import type { GlobalService } from '../api/types.ts';

/** `env=prod, distro=k3s, not legacy`, or `every cluster` for an empty selector (`every cluster, not legacy`). */
export function selectorText(global: Pick<GlobalService, 'tags' | 'distro' | 'ignoreClusters'>): string {
  const parts = [
    ...Object.entries(global.tags).map(([key, value]) => `${key}=${value}`),
    ...(global.distro ? [`distro=${global.distro}`] : []),
  ];
  const ignored = global.ignoreClusters.map((handle) => `not ${handle}`);
  return [parts.join(', ') || 'every cluster', ...ignored].join(', ');
}
