import type { GlobalService } from '../api/types.ts';

/** `env=prod, distro=k3s`, or `every cluster` for an empty selector. */
export function selectorText(global: Pick<GlobalService, 'tags' | 'distro'>): string {
  const parts = [
    ...Object.entries(global.tags).map(([key, value]) => `${key}=${value}`),
    ...(global.distro ? [`distro=${global.distro}`] : []),
  ];
  return parts.join(', ') || 'every cluster';
}
