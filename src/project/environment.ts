/**
 * What loading a project may reach beyond its own files: the Jinja2 renderer, the cluster (cluster vars sources;
 * undefined when rendering offline) and the shared git cache (git includes and git vars sources).
 */
import type { Cluster } from '../kube/cluster.ts';
import type { GitCache } from '../source/git-cache.ts';
import type { JinjaPool } from '../template/jinja-pool.ts';

export interface ProjectEnvironment {
  renderer: JinjaPool;
  cluster: Cluster | undefined;
  git: GitCache;
}
