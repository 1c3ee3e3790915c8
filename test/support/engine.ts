/**
 * The engine's parts for in-process tests, configured as the CLI configures them: from this process's environment,
 * whose PATH global-setup starts with the local cluster's tools (python3 with Jinja2, helm, kustomize, sops, git).
 */
import path from 'node:path';
import { cliEngineConfig, type EngineConfig } from '../../src/engine-config.ts';
import type { ProjectEnvironment } from '../../src/project/environment.ts';
import { SensitiveValues } from '../../src/project/sensitive.ts';
import { GitCache } from '../../src/source/git-cache.ts';
import { OciCache } from '../../src/source/oci-cache.ts';
import { RegistryCredentials } from '../../src/source/oci-credentials.ts';
import { JinjaPool } from '../../src/template/jinja-pool.ts';
import { Tools } from '../../src/tools.ts';

export function testConfig(overrides: Partial<EngineConfig> = {}): EngineConfig {
  return { ...cliEngineConfig(), ...overrides };
}

export function testTools(config: EngineConfig = testConfig()): Tools {
  return new Tools(config.tools, config.childEnv);
}

/** A Jinja2 pool of `workers` processes; stderr lines go to `onStderr` (default: dropped). */
export function testRenderer(
  options: {
    workers?: number;
    onStderr?: (line: string) => void;
    tools?: Tools;
    codeCacheDir?: string;
    timeLimitSeconds?: number;
    idleMs?: number;
  } = {},
): JinjaPool {
  return new JinjaPool({
    tools: options.tools ?? testTools(),
    workers: options.workers ?? 2,
    onStderr: options.onStderr ?? (() => undefined),
    codeCacheDir: options.codeCacheDir,
    timeLimitSeconds: options.timeLimitSeconds,
    idleMs: options.idleMs,
  });
}

/** A ProjectEnvironment rendering offline with `renderer`, the git and OCI caches in the usual cache folder. */
export function testProjectEnvironment(renderer: JinjaPool, config: EngineConfig = testConfig()): ProjectEnvironment {
  const tools = testTools(config);
  return {
    renderer,
    tools,
    cluster: undefined,
    git: new GitCache({ root: path.join(config.cacheDir, 'git'), tools }),
    oci: new OciCache(path.join(config.cacheDir, 'oci')),
    registries: new RegistryCredentials(),
    systemEnv: config.systemEnv,
    sensitive: new SensitiveValues(),
  };
}
