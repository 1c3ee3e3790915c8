/**
 * The clusters the KluctlDeployments and Live pages show: on a fleet server every cluster the user may read (the
 * fleet API lists only those, and any role on a cluster lets its user through the auth proxy); under `gantry
 * webui` its one cluster.
 */
import { useClusters } from '../api/queries.ts';
import { useUiMode } from '../session/ui-mode.tsx';

export type ShownClusters = { isPending: true } | { isPending: false; error?: Error; names: string[] };

export function useShownClusters(): ShownClusters {
  const mode = useUiMode();
  const clusters = useClusters(mode.kind === 'fleet');
  if (mode.kind === 'local') return { isPending: false, names: [mode.config.cluster] };
  if (clusters.isPending) return { isPending: true };
  if (clusters.isError) return { isPending: false, error: clusters.error, names: [] };
  return { isPending: false, names: clusters.data.map((cluster) => cluster.name) };
}
