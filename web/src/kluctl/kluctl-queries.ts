/** A cluster's KluctlDeployments, all namespaces, kept current by a watch through the auth proxy. */
import { useWatchedList } from '../kube/watched-list.ts';
import { type KluctlDeployment, kluctlPath } from './kluctl-resource.ts';

export function useKluctlDeployments(cluster: string) {
  return useWatchedList<KluctlDeployment>(cluster, kluctlPath());
}
