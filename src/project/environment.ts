/**
 * What loading a project may reach beyond its own files: the Jinja2 renderer, the cluster (cluster vars sources;
 * undefined when rendering offline), the shared git cache (git includes and git vars sources) and extra
 * environment for sops.
 */
import type { Cluster } from '../kube/cluster.ts';
import type { GitCache } from '../source/git-cache.ts';
import type { SopsEnv } from '../sops/decrypt.ts';
import type { JinjaPool } from '../template/jinja-pool.ts';

export interface ProjectEnvironment {
  renderer: JinjaPool;
  cluster: Cluster | undefined;
  git: GitCache;
  /**
   * Added to the process environment when sops decrypts (e.g. SOPS_AGE_KEY or GNUPGHOME from a Secret, for the
   * GitOps controller); without it sops finds keys in the process environment only.
   */
  sopsEnv?: SopsEnv;
}
