/**
 * The controller reads no file outside its checkout: a repository whose vars file, item folder or Jinja2 include is a
 * symlink to the controller host's files fails its reconcile naming the link, and the host file's content appears in
 * no status, Event, log or object.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl } from '../support/cli.ts';
import {
  applyObject,
  installCrds,
  kluctlDeployment,
  readyOf,
  startController,
  waitNotReady,
  type RunningController,
} from '../support/controller.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';

const NS = 'gantry-e2e-controller-confinement';
const marker = `GANTRY-LEAK-${randomBytes(6).toString('hex')}`;
const configMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n  namespace: ${NS}\ndata:\n  value: "${value}"\n`;

let host: string;
let repo: TestRepo;
let controller: RunningController;

describe('the controller confined to its checkout', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    // The controller host's files: what a repository's symlinks point at.
    host = await mkdtemp(path.join(tmpdir(), 'gantry-host-'));
    await mkdir(path.join(host, 'folder'));
    await writeFile(path.join(host, 'secret.yml'), `marker: ${marker}\n`);
    await writeFile(path.join(host, 'folder', 'cm.yaml'), configMap(marker));
    await writeFile(path.join(host, 'folder', 'secret.txt'), marker);
    repo = await createRepo({
      'vars-link/.kluctl.yaml': 'discriminator: gantry-e2e-controller-confinement\ntargets:\n  - name: default\n',
      'vars-link/deployment.yaml': 'vars:\n  - file: vars.yml\ndeployments:\n  - path: app\n',
      'vars-link/app/cm.yaml': configMap('{{ marker }}'),
      'folder-link/.kluctl.yaml': 'discriminator: gantry-e2e-controller-confinement\ntargets:\n  - name: default\n',
      'folder-link/deployment.yaml': 'deployments:\n  - path: app\n',
      'include-link/.kluctl.yaml': 'discriminator: gantry-e2e-controller-confinement\ntargets:\n  - name: default\n',
      'include-link/deployment.yaml': 'deployments:\n  - path: app\n',
      'include-link/app/cm.yaml': configMap("{% include 'lib/secret.txt' %}"),
    });
    await repo.commit({
      'vars-link/vars.yml': { symlink: path.join(host, 'secret.yml') },
      'folder-link/app': { symlink: path.join(host, 'folder') },
      'include-link/app/lib': { symlink: path.join(host, 'folder') },
    });
    await kubectl(['create', 'namespace', NS]).catch(() => undefined);
    await installCrds();
    controller = await startController(['--namespace', NS]);
  });

  afterAll(async () => {
    await controller?.stop();
    await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', '--all', '-n', NS, '--wait=false']).catch(() => undefined);
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
    await repo?.remove();
    if (host) await rm(host, { recursive: true, force: true });
  });

  const cases: Array<[string, RegExp]> = [
    ['vars-link', /'vars\.yml' leads outside the project through the symlink 'vars\.yml' -> '\/.*\/secret\.yml'/],
    ['folder-link', /'app' leads outside the project through the symlink 'app' -> '\/.*\/folder'/],
    ['include-link', /'lib\/secret\.txt' leads outside the project through the symlink 'app\/lib' -> '\/.*\/folder'/],
  ];
  for (const [name, message] of cases) {
    it(`fails ${name} naming the link, leaking nothing`, async () => {
      await applyObject(kluctlDeployment(NS, name, repo.url, { source: { git: { url: repo.url, path: name } } }));
      const failed = await waitNotReady(NS, name);
      expect(readyOf(failed)?.message).toMatch(message);
      expect(JSON.stringify(failed)).not.toContain(marker);
      expect(await kubectl(['get', 'events', '-n', NS, '-o', 'json'])).not.toContain(marker);
      expect(await kubectl(['get', 'configmaps', '-n', NS, '-o', 'json'])).not.toContain(marker);
      expect(await controller.log()).not.toContain(marker);
    });
  }
});
