/**
 * The long-lived parts every role shares, built from its EngineConfig (src/engine-config.ts): the programs it runs,
 * the git cache, the OCI artifact cache, the Jinja2 worker pool and one Cluster per kubeconfig context. The role owns the Engine and closes it.
 */
import path from 'node:path';
import type { EngineConfig } from './engine-config.ts';
import type { ChartTools } from './helm/helm-cli.ts';
import { ClusterPool } from './kube/cluster-pool.ts';
import { DISCRIMINATOR_LABEL } from './render/postprocess.ts';
import { GitCache } from './source/git-cache.ts';
import { OciCache } from './source/oci-cache.ts';
import { JinjaPool } from './template/jinja-pool.ts';
import { Tools } from './tools.ts';

/** The long-lived parts of one role, made from its EngineConfig; the role owns it and closes it. */
export class Engine {
  readonly config: EngineConfig;
  readonly tools: Tools;
  readonly git: GitCache;
  readonly oci: OciCache;
  readonly renderer: JinjaPool;
  readonly clusters: ClusterPool;

  constructor(config: EngineConfig) {
    this.config = config;
    this.tools = new Tools(config.tools, config.childEnv);
    this.git = new GitCache({ root: path.join(config.cacheDir, 'git'), tools: this.tools, refreshMs: config.gitRefreshMs });
    this.oci = new OciCache(path.join(config.cacheDir, 'oci'));
    this.renderer = new JinjaPool({
      tools: this.tools,
      workers: config.templateWorkers,
      idleMs: config.templateIdleMs,
      onStderr: config.onTemplateStderr,
      pythonEnvCache: config.pythonEnvCache,
      onNotice: config.onNotice,
      codeCacheDir: config.templateCodeCache,
    });
    this.clusters = new ClusterPool({ ...config.kubeApi, watchLabel: config.watchDiscriminated ? DISCRIMINATOR_LABEL : undefined });
  }

  /** helm and git for charts, and where charts pulled on demand (`skipPrePull`) are kept. */
  get charts(): ChartTools {
    return { tools: this.tools, git: this.git, chartsCacheDir: path.join(this.config.cacheDir, 'helm-charts') };
  }

  /** Stops the Jinja2 workers and closes every cluster's connections. */
  async close(): Promise<void> {
    await Promise.all([this.renderer.close(), this.clusters.close()]);
  }
}
