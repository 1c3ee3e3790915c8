/**
 * What a writer asks of a KluctlDeployment's controller, as `gantry gitops` asks it (src/gitops/requests.ts), by
 * JSON merge patches through the auth proxy (the cluster's RBAC lets writers and admins patch KluctlDeployments):
 *  - a command (reconcile, diff, deploy, prune, validate): the request annotation `kluctl.io/request-<kind>`
 *    holding `{"requestValue": <unique>}` (the caller's, to know its answer), which the controller answers in status.<kind>RequestResult;
 *    a diff of another ref adds `overridesPatch` with the source's ref (Kluctl's manual request overrides);
 *  - suspend and resume: spec.suspend;
 *  - approval (spec.manual): spec.manualObjectsHash set to the objects hash the controller rendered.
 * Nothing is awaited here: the watch of the KluctlDeployments brings the controller's progress and answer.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { clusterMergePatch } from '../api/fleet.ts';
import { watchedListKey } from '../kube/watched-list.ts';
import { type KluctlDeployment, kluctlPath, REQUEST_ANNOTATIONS, type RequestKind } from './kluctl-resource.ts';

type Action =
  | { kind: 'request'; request: RequestKind; requestValue: string; overridesPatch?: Record<string, unknown> }
  | { kind: 'suspend'; suspend: boolean }
  | { kind: 'approve'; hash: string };

export function useKluctlAction(cluster: string, deployment: KluctlDeployment) {
  const queryClient = useQueryClient();
  const { namespace, name } = deployment.metadata;
  return useMutation({
    mutationFn: async (action: Action) => ({
      // The version the user acted on, read when they did (the options follow every render).
      before: deployment.metadata.resourceVersion,
      patched: await clusterMergePatch<KluctlDeployment>(cluster, kluctlPath(namespace, name), patchFor(action)),
    }),
    // The patched object at once, unless a watch event came first (which may already be newer than the patch's
    // answer): the page shows the request as sent.
    onSuccess: ({ before, patched }) =>
      queryClient.setQueryData<{ items: KluctlDeployment[] }>(
        watchedListKey(cluster, kluctlPath()),
        (list) =>
          list && {
            ...list,
            items: list.items.map((item) =>
              item.metadata.uid === patched.metadata.uid && item.metadata.resourceVersion === before ? patched : item,
            ),
          },
      ),
  });
}

function patchFor(action: Action): Record<string, unknown> {
  switch (action.kind) {
    case 'request':
      return {
        metadata: {
          annotations: {
            [REQUEST_ANNOTATIONS[action.request]]: JSON.stringify({
              requestValue: action.requestValue,
              ...(action.overridesPatch ? { overridesPatch: action.overridesPatch } : {}),
            }),
          },
        },
      };
    case 'suspend':
      return { spec: { suspend: action.suspend } };
    case 'approve':
      return { spec: { manualObjectsHash: action.hash } };
  }
}
