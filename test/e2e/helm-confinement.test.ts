/**
 * A local Helm chart reads no file outside the project: helm follows the symlinks of a chart folder (`.Files.Get`),
 * so the chart's folder and every link in it must lead inside the project (src/render/helm.ts confineLocalChart).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantry } from '../support/cli.ts';

const marker = `GANTRY-LEAK-${randomBytes(6).toString('hex')}`;
const chartYaml = 'apiVersion: v2\nname: app\nversion: 0.1.0\n';
const template = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: read\ndata:\n  text: {{ .Files.Get "files/data" | quote }}\n';
const project = {
  '.kluctl.yaml': 'discriminator: gantry-e2e-helm-confinement\ntargets:\n  - name: t\n',
  'deployment.yaml': 'deployments:\n  - path: app\n',
  'app/helm-chart.yaml': 'helmChart:\n  path: chart\n  releaseName: r\n  namespace: default\n',
};

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await removeCopy(dir);
});

/** `<tmp>/project` holding `files` and `links` (path -> target), beside `<tmp>/outside` whose files hold the marker. */
async function projectWith(files: Record<string, string>, links: Record<string, string>): Promise<string> {
  const top = await writeProject({
    'outside/data': marker,
    'outside/chart/Chart.yaml': chartYaml,
    'outside/chart/templates/cm.yaml': template,
    'outside/chart/files/data': marker,
    ...Object.fromEntries(Object.entries({ ...project, ...files }).map(([file, text]) => [`project/${file}`, text])),
  });
  dirs.push(top);
  const dir = path.join(top, 'project');
  for (const [link, target] of Object.entries(links)) {
    await mkdir(path.dirname(path.join(dir, link)), { recursive: true });
    await symlink(target, path.join(dir, link));
  }
  return dir;
}

const render = (dir: string) => gantry(['render', '-t', 't', '--project-dir', dir, '--offline-kubernetes']);

describe('a local Helm chart', { timeout: 120_000 }, () => {
  it('refuses a chart folder that is a symlink to a folder outside, naming the link', async () => {
    const run = await render(await projectWith({}, { 'app/chart': '../../outside/chart' }));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(
      /helm-chart\.yaml: path: 'chart' leads outside the project through the symlink 'app\/chart' -> '\.\.\/\.\.\/outside\/chart'/,
    );
    expect(run.stdout + run.stderr).not.toContain(marker);
  });

  it('refuses a chart holding a symlink to a file outside, naming the link', async () => {
    const dir = await projectWith(
      { 'app/chart/Chart.yaml': chartYaml, 'app/chart/templates/cm.yaml': template },
      { 'app/chart/files/data': '../../../../outside/data' },
    );
    const run = await render(dir);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(
      /local chart 'chart': the symlink 'files\/data' -> '\.\.\/\.\.\/\.\.\/\.\.\/outside\/data' leads outside the project/,
    );
    expect(run.stdout + run.stderr).not.toContain(marker);
  });

  it('keeps a chart whose symlinks stay inside the project working', async () => {
    const dir = await projectWith(
      { 'app/chart/Chart.yaml': chartYaml, 'app/chart/templates/cm.yaml': template, 'shared/data': 'from-inside' },
      { 'app/chart/files/data': '../../../shared/data' },
    );
    const run = await render(dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('text: from-inside');
  });
});
