/**
 * The Helm releases of a project as helm-pull and helm-update see them (kluctl's loadHelmReleases): every
 * helm-chart.yaml below the project folder, read as it is on disk (not templated, so it must be valid YAML even
 * where it holds Jinja2 expressions, as Kluctl's docs require), local charts left out.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { findProjectFile, relativeSlashPath } from '../files.ts';
import { ProblemList, problemsOf } from '../problems.ts';
import { chartSourceOf, readHelmChartConfig, type HelmChartConfig, type RemoteChartSource } from './chart-config.ts';
import { HELM_CHARTS_DIR } from './layout.ts';

export interface ProjectRelease {
  /** Absolute path of the helm-chart.yaml. */
  file: string;
  /** The same, relative to the project folder with forward slashes, for messages. */
  relFile: string;
  config: HelmChartConfig;
  source: RemoteChartSource;
}

/**
 * @throws Error when `projectDir` holds no .kluctl.yaml or .kluctl-library.yaml (the commands only work on a
 *   project root, as Kluctl's do), or ProblemList with every invalid helm-chart.yaml.
 */
export async function findProjectReleases(projectDir: string, command: string): Promise<ProjectRelease[]> {
  if (!(await findProjectFile(projectDir, '.kluctl')) && !(await findProjectFile(projectDir, '.kluctl-library'))) {
    throw new Error(`${command} works on the root of a Kluctl project: ${projectDir} has no .kluctl.yaml or .kluctl-library.yaml`);
  }
  const releases: ProjectRelease[] = [];
  const problems: string[] = [];
  for (const file of await findHelmChartFiles(projectDir)) {
    const relFile = relativeSlashPath(projectDir, file);
    try {
      const config = await readHelmChartConfig(file, relFile);
      const source = chartSourceOf(config, relFile, path.dirname(file), projectDir);
      if (source.kind !== 'local') releases.push({ file, relFile, config, source });
    } catch (error) {
      problems.push(...problemsOf(error));
    }
  }
  if (problems.length > 0) throw new ProblemList(problems);
  return releases;
}

async function findHelmChartFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== '.git' && entry.name !== HELM_CHARTS_DIR) files.push(...(await findHelmChartFiles(child)));
    else if (entry.isFile() && /^helm-chart\.ya?ml$/.test(entry.name)) files.push(child);
  }
  return files.sort();
}
