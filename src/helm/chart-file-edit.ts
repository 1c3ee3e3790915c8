/**
 * Writing a new version into a helm-chart.yaml without touching anything else in it: the scalar holding the version
 * is replaced in the file's text, so comments, order, indentation and the other values' quoting stay as they were
 * (Kluctl rewrites the whole file and loses them).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { replaceScalar } from '../yaml.ts';

/** Where a release's version lives: `helmChart.chartVersion`, or `helmChart.git.ref.tag` for git charts. */
export type VersionField = 'chartVersion' | 'gitTag';

const FIELD_PATHS: Record<VersionField, string[]> = {
  chartVersion: ['helmChart', 'chartVersion'],
  gitTag: ['helmChart', 'git', 'ref', 'tag'],
};

/**
 * Replaces the version in `text`, keeping comments, order and quoting (see replaceScalar in src/yaml.ts).
 * @throws YamlError when the field is not a scalar in the text.
 */
export function replaceVersion(text: string, field: VersionField, version: string, source: string): string {
  return replaceScalar(text, FIELD_PATHS[field], version, source);
}

/** replaceVersion on a file, in place. */
export async function writeVersion(file: string, field: VersionField, version: string): Promise<void> {
  await writeFile(file, replaceVersion(await readFile(file, 'utf8'), field, version, file));
}
