/**
 * The configuration of Gantry's image: how a container of it runs. The Dockerfile states the same (the image test
 * compares them). One image serves every role: its entrypoint is `gantry`, so `args: [agent, run, …]` (the agent's
 * Deployment) and `command: [gantry, controller, run]` (install/controller) both work.
 */
import packageJson from '../../package.json' with { type: 'json' };
import { GANTRY_IMAGE_REPOSITORY } from '../../src/version.ts';
import { IMAGE_USER, PYTHON_ENV } from './root-fs.ts';

export interface ImageConfig {
  /** `uid:gid`, numeric so that Kubernetes' runAsNonRoot can check it without the image's /etc/passwd. */
  user: string;
  entrypoint: string[];
  cmd: string[];
  /** In this order. */
  env: Array<[name: string, value: string]>;
  labels: Record<string, string>;
}

/**
 * The configuration for Gantry `version`. It writes nowhere but /tmp (HOME, the cache, Node's compile cache), so the
 * root file system can be read-only with an emptyDir at /tmp, as install/controller/deployment.yaml has it.
 */
export function imageConfig(version: string): ImageConfig {
  return {
    user: `${IMAGE_USER.uid}:${IMAGE_USER.gid}`,
    entrypoint: ['gantry'],
    cmd: ['--help'],
    env: [
      ['PATH', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      ['HOME', '/tmp'],
      ['GANTRY_CACHE_DIR', '/tmp/gantry-cache'],
      ['GANTRY_PYTHON', `${PYTHON_ENV}/bin/python3`],
    ],
    // The OCI annotation keys (image-spec annotations.md), which registries and scanners show.
    labels: {
      'org.opencontainers.image.title': 'Gantry',
      'org.opencontainers.image.description': packageJson.description,
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.source': sourceRepository(),
      'org.opencontainers.image.licenses': packageJson.license,
    },
  };
}

/** GitHub's repository of an image on ghcr.io/<owner>/<name>: the link GitHub uses to connect a package to its repository. */
function sourceRepository(): string {
  return GANTRY_IMAGE_REPOSITORY.replace(/^ghcr\.io\//, 'https://github.com/');
}
