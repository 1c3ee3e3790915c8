/**
 * What loading a project may reach beyond its own files: the Jinja2 renderer, the programs the engine runs (sops), the
 * cluster (cluster vars sources; undefined when rendering offline), the shared git cache (git includes and git vars
 * sources), the shared OCI artifact cache and the registry credentials (OCI includes), the environment `systemEnvVars` reads, keys for sops, the collector of sensitive values, and the signal
 * that abandons the load.
 */
import type { Cluster } from '../kube/cluster.ts';
import type { SensitiveValues } from './sensitive.ts';
import type { GitCache } from '../source/git-cache.ts';
import type { OciCache } from '../source/oci-cache.ts';
import type { RegistryCredentials } from '../source/oci-credentials.ts';
import type { SopsEnv } from '../sops/decrypt.ts';
import type { JinjaPool } from '../template/jinja-pool.ts';
import type { Tools } from '../tools.ts';
import type { RenderInputs } from './render-inputs.ts';

/**
 * The environment `systemEnvVars` sources read. Kluctl reads the whole environment; the CLI keeps that, server roles
 * pass only the variables their operator allowed, and say so when a template asks for another.
 */
export interface SystemEnv {
  variables: Readonly<Record<string, string>>;
  /** Added to the error for a variable that is not there, e.g. how an operator allows more. */
  missingHint?: string;
}

export interface ProjectEnvironment {
  renderer: JinjaPool;
  tools: Tools;
  cluster: Cluster | undefined;
  git: GitCache;
  oci: OciCache;
  /** Credentials for OCI includes: the CLI's flags, environment and docker config, or a KluctlDeployment's Secrets. */
  registries: RegistryCredentials;
  systemEnv: SystemEnv;
  /**
   * Added to the engine's child environment when sops decrypts (e.g. SOPS_AGE_KEY or GNUPGHOME from a Secret, for
   * the GitOps controller); without it sops finds keys in that environment only.
   */
  sopsEnv?: SopsEnv;
  /** Collects the values of sensitive vars sources, to be masked in whatever the run shows. */
  sensitive: SensitiveValues;
  /** Told of whatever makes the render depend on more than the project's files (includes, vars sources). */
  inputs?: RenderInputs | undefined;
  signal?: AbortSignal;
}
