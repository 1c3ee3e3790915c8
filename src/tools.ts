/**
 * Where Gantry finds the external programs it drives. An environment variable (GANTRY_HELM, GANTRY_KUSTOMIZE,
 * GANTRY_SOPS) names an exact binary; otherwise the program is looked up on PATH (the local cluster's setup links
 * its builds into .cluster/bin, which the npm scripts and the demo put first on PATH).
 */
export type Tool = 'helm' | 'kustomize' | 'sops';

export function toolPath(tool: Tool): string {
  return process.env[`GANTRY_${tool.toUpperCase()}`] ?? tool;
}
