/**
 * What `gantry webui` answers at GET /v1/ui-config, which the web UI reads to know it runs there (a fleet server has
 * no such route). Nothing of Node's in it, so the browser's build imports it too.
 */

/** The only cluster `gantry webui` shows: the kubeconfig's current context. */
export const LOCAL_CLUSTER = 'local';

export interface UiConfig {
  mode: 'local';
  cluster: typeof LOCAL_CLUSTER;
  /** The kubeconfig's context and its API server, for the top bar. */
  context: string;
  server: string;
}
