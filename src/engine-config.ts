/**
 * The engine's configuration. Nothing in the engine reads the process (environment, home folder, stderr) on its own:
 * the role's entry point builds an EngineConfig — the CLI with cliEngineConfig, as Kluctl's CLI behaves, the
 * controller and the agent with serverEngineConfig, which keeps their own credentials from a tenant's templates and
 * tools — and owns the Engine (src/engine.ts) it makes from it. Kept apart from the Engine so a command that only
 * needs the configuration (`gantry version`) does not load the Kubernetes client.
 */
import os from 'node:os';
import path from 'node:path';
import type { SystemEnv } from './project/environment.ts';
import type { ToolPaths } from './tools.ts';

/** The field manager Gantry applies with, and the one whose objects prune and delete consider Gantry's. */
export const DEFAULT_FIELD_MANAGER = 'gantry';

export interface EngineConfig {
  /** Root of the caches: `git/` (mirrors, snapshots and git's HOME), `oci/`, `helm-charts/`, `artifacts/`, `home/`, `jinja-code/`. */
  cacheDir: string;
  /** The programs the engine runs: paths, or names looked up on `childEnv.PATH`. */
  tools: ToolPaths;
  /** The whole environment of every program the engine runs; nothing else of this process's reaches them. */
  childEnv: Readonly<Record<string, string>>;
  /** What `systemEnvVars` vars sources read (see SystemEnv). */
  systemEnv: SystemEnv;
  /** Field manager of every write, and the owner prune and delete recognise (Kluctl's is `kluctl`). */
  fieldManager: string;
  /** Client-side limits per API server (client-go's QPS and burst) and of one request, in ms. */
  kubeApi: { qps: number; burst: number; requestTimeoutMs: number };
  /** Jinja2 worker processes; default the number of CPUs. */
  templateWorkers?: number;
  /** The Jinja2 workers stop after this long (ms) with nothing to render (JinjaPoolOptions.idleMs); none: they stay. */
  templateIdleMs?: number;
  /** Receives each line the Jinja2 workers write to stderr (`debug_print`). */
  onTemplateStderr: (line: string) => void;
  /**
   * Where Gantry keeps its own Python env (src/template/python-env.ts), made on first render when python3 lacks the
   * pinned packages; undefined when the role named its Python (GANTRY_PYTHON), which must then have them.
   */
  pythonEnvCache?: string;
  /** Receives a line when slow first-use work starts and ends (making the Python env). */
  onNotice?: (line: string) => void;
  /** A git repository is fetched at most this often, in ms (default 60 s). */
  gitRefreshMs?: number;
  /**
   * Where compiled Jinja2 code is kept across processes (see JinjaPoolOptions.codeCacheDir): for the CLI, whose
   * workers end with each command; a long-running role keeps it in its workers' memory.
   */
  templateCodeCache?: string;
  /**
   * Keep every object labelled with a discriminator in a watched cache per cluster (src/kube/labelled-objects.ts)
   * instead of listing every resource for each deploy: for roles that deploy many targets over a long time.
   */
  watchDiscriminated?: boolean;
}

/** kubectl's and Flux's controllers' limits: 50 requests a second on average, bursts of 300. */
const DEFAULT_KUBE_API = { qps: 50, burst: 300, requestTimeoutMs: 60_000 };

/** Variables every program needs to run and to reach the network as the host is set up; never credentials. */
const SERVER_CHILD_ENV = [
  'PATH',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
];

/** `$GANTRY_CACHE_DIR`, else `${XDG_CACHE_HOME:-$HOME/.cache}/gantry` (scripts/setup/cache.ts uses the same rule). */
export function defaultCacheDir(env: NodeJS.ProcessEnv): string {
  return env['GANTRY_CACHE_DIR'] || path.join(env['XDG_CACHE_HOME'] || path.join(os.homedir(), '.cache'), 'gantry');
}

/** GANTRY_HELM, GANTRY_KUSTOMIZE, GANTRY_SOPS, GANTRY_GIT, GANTRY_PYTHON, GANTRY_GPG name exact programs; else PATH finds them. */
function toolPaths(env: NodeJS.ProcessEnv): ToolPaths {
  return {
    helm: env['GANTRY_HELM'] || 'helm',
    kustomize: env['GANTRY_KUSTOMIZE'] || 'kustomize',
    sops: env['GANTRY_SOPS'] || 'sops',
    git: env['GANTRY_GIT'] || 'git',
    python: env['GANTRY_PYTHON'] || 'python3',
    gpg: env['GANTRY_GPG'] || 'gpg',
    gpgconf: env['GANTRY_GPGCONF'] || 'gpgconf',
  };
}

function definedOnly(env: NodeJS.ProcessEnv, names?: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    (names ?? Object.keys(env)).flatMap((name) => (env[name] === undefined ? [] : [[name, env[name] as string] as const])),
  );
}

/**
 * The CLI's configuration: the user's own process, so its programs and `systemEnvVars` see the whole environment,
 * as with Kluctl's CLI; Jinja2's `debug_print` goes to stderr.
 */
export function cliEngineConfig(options: { cacheDir?: string } = {}, env: NodeJS.ProcessEnv = process.env): EngineConfig {
  return {
    cacheDir: options.cacheDir ?? defaultCacheDir(env),
    tools: toolPaths(env),
    childEnv: definedOnly(env),
    systemEnv: { variables: definedOnly(env) },
    fieldManager: DEFAULT_FIELD_MANAGER,
    kubeApi: DEFAULT_KUBE_API,
    onTemplateStderr: (line) => process.stderr.write(`${line}\n`),
    pythonEnvCache: env['GANTRY_PYTHON'] ? undefined : (options.cacheDir ?? defaultCacheDir(env)),
    templateCodeCache: path.join(options.cacheDir ?? defaultCacheDir(env), 'jinja-code'),
  };
}

export interface ServerEngineOptions {
  cacheDir?: string;
  /** Variables of this process that `systemEnvVars` may read; none by default. */
  allowedSystemEnv?: readonly string[];
  /** How an operator allows more, for the error a template asking for another variable gets. */
  allowSystemEnvHint: string;
  kubeApi?: Partial<EngineConfig['kubeApi']>;
  onTemplateStderr: (line: string) => void;
  /** As EngineConfig.onNotice. */
  onNotice?: (line: string) => void;
  gitRefreshMs?: number;
}

/** How long a controller's or agent's Jinja2 workers stay with nothing to render. */
const SERVER_TEMPLATE_IDLE_MS = 30_000;

/**
 * The configuration of a role that deploys other people's projects (controller, agent): programs get PATH, locale,
 * proxies and CA settings only, and a HOME of their own under the cache (no credentials, cloud config or keys of
 * this process); `systemEnvVars` sees only the variables the operator allowed.
 */
export function serverEngineConfig(options: ServerEngineOptions, env: NodeJS.ProcessEnv = process.env): EngineConfig {
  const cacheDir = options.cacheDir ?? defaultCacheDir(env);
  return {
    cacheDir,
    tools: toolPaths(env),
    childEnv: { ...definedOnly(env, SERVER_CHILD_ENV), HOME: path.join(cacheDir, 'home') },
    systemEnv: { variables: definedOnly(env, options.allowedSystemEnv ?? []), missingHint: options.allowSystemEnvHint },
    fieldManager: DEFAULT_FIELD_MANAGER,
    kubeApi: { ...DEFAULT_KUBE_API, ...options.kubeApi },
    onTemplateStderr: options.onTemplateStderr,
    pythonEnvCache: env['GANTRY_PYTHON'] ? undefined : cacheDir,
    onNotice: options.onNotice,
    gitRefreshMs: options.gitRefreshMs,
    watchDiscriminated: true,
    // A long-lived role renders in bursts (a sync, a reconcile): Python is not held between them.
    templateIdleMs: SERVER_TEMPLATE_IDLE_MS,
  };
}
