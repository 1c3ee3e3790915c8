/**
 * Vars sources, as kluctl's templating/variable-sources docs define them: each source is rendered with the vars
 * loaded before it (and skipped when its `when` is false), loaded, optionally placed at a targetPath, then merged
 * into the templating context (or under it, with noOverride). Gantry loads values, file, git, gitFiles,
 * clusterConfigMap, clusterSecret, clusterObject, systemEnvVars, http and vault (see vars/); the cloud secret stores
 * (awsSecretsManager, gcpSecretManager, azureKeyVault) are refused with a clear error.
 *
 * The values a sensitive source loads (sops-encrypted files, Secrets, cluster objects, environment variables, vault
 * secrets, or `sensitive: true`) go into the environment's SensitiveValues, which masks them in everything shown of
 * the run.
 */
import { CLOUD_VARS_SOURCES, SUPPORTED_VARS_SOURCES, VARS_SOURCE_KINDS, type VarsSource } from './schema.ts';
import { evaluateCondition } from './render-values.ts';
import { deepMerge, isPlainObject, type Values } from '../values.ts';
import { loadClusterMap, loadClusterObject } from './vars/cluster.ts';
import { loadSystemEnvVars } from './vars/env.ts';
import { loadFileSource, loadGitSource } from './vars/files.ts';
import { loadGitFilesSource } from './vars/git-files.ts';
import { loadHttp } from './vars/http.ts';
import { parseTargetPath, placeAtPath } from './vars/json-path.ts';
import { renderWithContext, type LoadedVars, type SourceRequest, type VarsScope } from './vars/source.ts';
import { loadVault } from './vars/vault.ts';

export type { VarsScope };

type SupportedKind = (typeof SUPPORTED_VARS_SOURCES)[number];
type Loader<K extends SupportedKind> = (
  config: NonNullable<VarsSource[K]>,
  request: SourceRequest,
) => Promise<LoadedVars | undefined> | LoadedVars;

/** The vars sources a render may be reused after (target/render-cache.ts): what they read can be checked again. */
const REUSABLE_SOURCES: ReadonlySet<SupportedKind> = new Set(['values', 'file', 'git', 'clusterConfigMap']);

const LOADERS: { [K in SupportedKind]: Loader<K> } = {
  values: (values) => ({ value: values, sensitive: false }),
  file: loadFileSource,
  git: loadGitSource,
  gitFiles: loadGitFilesSource,
  clusterConfigMap: (config, request) => loadClusterMap(config, 'ConfigMap', request),
  clusterSecret: (config, request) => loadClusterMap(config, 'Secret', request),
  clusterObject: loadClusterObject,
  systemEnvVars: loadSystemEnvVars,
  http: loadHttp,
  vault: loadVault,
};

/**
 * Loads `sources` in order into a copy of `context` and returns the new context.
 * @throws Error naming the declaring file and the source (`<file>: vars[<index>]`) for a bad source, a missing
 *   file/object/variable (unless ignoreMissing), a template error, invalid YAML, a sops failure, a cluster source
 *   while offline, or a failed request.
 */
export async function loadVars(sources: readonly VarsSource[] | undefined, context: Values, scope: VarsScope): Promise<Values> {
  let result = context;
  for (const [index, source] of (sources ?? []).entries()) {
    result = await loadSource(source, result, scope, `${scope.declaredIn}: vars[${index}]`);
  }
  return result;
}

async function loadSource(raw: VarsSource, context: Values, scope: VarsScope, label: string): Promise<Values> {
  const kind = sourceKind(raw, label);
  const request: SourceRequest = { context, scope, label, ignoreMissing: raw.ignoreMissing ?? false, multidoc: raw.multidoc ?? false };
  const source = (await renderWithContext(raw, request, scope.declaredIn)) as VarsSource;
  if (
    !(await evaluateCondition(
      source.when,
      {
        rootDir: scope.rootDir,
        dir: scope.searchDirs[0] ?? scope.rootDir,
        name: scope.declaredIn,
        context,
        signal: scope.environment.signal,
      },
      scope.environment.renderer,
    ))
  ) {
    return context;
  }
  if (request.multidoc && source.targetPath === undefined) throw new Error(`${label}: 'multidoc' needs 'targetPath'`);
  // A git source records its commit, a clusterConfigMap its read, themselves: a later run checks them again.
  if (!REUSABLE_SOURCES.has(kind)) scope.environment.inputs?.cannotReuse(`${label}: a ${kind} vars source`);
  const loaded = await (LOADERS[kind] as Loader<SupportedKind>)(source[kind] as never, request);
  if (loaded === undefined) return context;
  const newVars = placeVars(loaded.value, source.targetPath, context, label);
  if (raw.sensitive ?? loaded.sensitive) scope.environment.sensitive.add(loaded.value);
  return source.noOverride ? deepMerge(newVars, context) : deepMerge(context, newVars);
}

/**
 * The one source kind `source` has, as Kluctl's ValidateVarsSource requires.
 * @throws Error for none, several, or a kind Gantry does not load.
 */
function sourceKind(source: VarsSource, label: string): SupportedKind {
  const kinds = VARS_SOURCE_KINDS.filter((kind) => source[kind] !== undefined);
  const [kind, ...others] = kinds;
  if (!kind) throw new Error(`${label}: a vars source needs one of ${SUPPORTED_VARS_SOURCES.join(', ')}`);
  if (others.length > 0) throw new Error(`${label}: a vars source can have only one of ${kinds.join(', ')}`);
  if (!(SUPPORTED_VARS_SOURCES as readonly string[]).includes(kind)) {
    throw new Error(
      `${label}: vars source '${kind}' is not supported by this version of Gantry: the cloud secret stores ` +
        `(${CLOUD_VARS_SOURCES.join(', ')}) are not implemented; load such secrets with vault, clusterSecret or a ` +
        `sops-encrypted file (supported: ${SUPPORTED_VARS_SOURCES.join(', ')})`,
    );
  }
  return kind as SupportedKind;
}

function placeVars(value: unknown, targetPath: string | undefined, context: Values, label: string): Values {
  if (targetPath === undefined) {
    if (!isPlainObject(value)) throw new Error(`${label}: 'targetPath' is required for a vars source that does not load a mapping`);
    return value;
  }
  try {
    return placeAtPath(parseTargetPath(targetPath), value, context, targetPath);
  } catch (error) {
    throw new Error(`${label}: ${(error as Error).message}`);
  }
}
