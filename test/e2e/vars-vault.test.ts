/**
 * The `vault` vars source against a real OpenBao dev server (test/support/openbao.ts): `gantry render` loads KV
 * version 2 secrets (and KV version 1 ones holding a `data` mapping, as Kluctl reads them), in a namespace too;
 * each failure exits 1 with an error naming the source, and the token never shows. Then `gantry controller run`,
 * given VAULT_TOKEN and `--allow-system-env-var VAULT_TOKEN`, deploys a project whose vars come from vault.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gantry, kubectl, type CliRun } from '../support/cli.ts';
import { applyObject, configMapValue, installCrds, kluctlDeployment, startController, waitReady } from '../support/controller.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { startOpenBao, type TestOpenBao } from '../support/openbao.ts';

const KV2_PASSWORD = 'kv2-password-value';
const KV1_VALUE = 'kv1-secret-value';
const NEIGHBOUR = 'neighbour-secret-value';

let bao: TestOpenBao;
const projects: string[] = [];

beforeAll(async () => {
  // The gantry children inherit this process's environment: each test gives the token it means.
  delete process.env['VAULT_TOKEN'];
  delete process.env['VAULT_NAMESPACE'];
  bao = await startOpenBao();
  await bao.api('POST', 'secret/data/app', { data: { password: KV2_PASSWORD, db: { port: 5432 } } });
  await bao.api('POST', 'secret/data/templated', { data: { url: 'db-{{ region }}' } });
  await bao.api('POST', 'secret/data/broken', { data: { quote: `{{ '"' }}`, neighbour: NEIGHBOUR } });
  await bao.api('POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } });
  await bao.api('POST', 'kv1/app', { data: { fromV1: KV1_VALUE } });
  await bao.api('POST', 'kv1/flat', { fromV1: KV1_VALUE });
  await bao.api('POST', 'sys/namespaces/team1');
  await bao.api('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } }, 'team1');
  await bao.api('POST', 'secret/data/app', { data: { password: 'team1-password-value' } }, 'team1');
}, 120_000);

afterAll(async () => {
  await bao?.close();
  for (const dir of projects) await removeCopy(dir);
});

/** A project whose one ConfigMap shows `data` (key → template) after loading `vars`. */
async function project(vars: string, data: Record<string, string> = { password: '{{ password }}' }): Promise<string> {
  const entries = Object.entries(data).map(([key, template]) => `  ${key}: "${template}"`);
  const dir = await writeProject({
    '.kluctl.yaml': 'discriminator: gantry-e2e-vars-vault\ntargets:\n  - name: t\n',
    'deployment.yaml': `vars:\n${vars}deployments:\n  - path: app\n`,
    'app/configmap.yaml': ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: from-vault', 'data:', ...entries, ''].join('\n'),
  });
  projects.push(dir);
  return dir;
}

function vaultSource(path: string, address = bao.address): string {
  return `  - vault:\n      address: ${address}\n      path: ${path}\n`;
}

async function render(dir: string, env: Record<string, string> = { VAULT_TOKEN: bao.rootToken }): Promise<CliRun> {
  const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--offline-kubernetes', '-o', 'json'], { env });
  expect(run.stdout + run.stderr).not.toContain(bao.rootToken);
  return run;
}

function renderedData(run: CliRun): Record<string, string> {
  expect(run.code, run.stderr).toBe(0);
  const objects = JSON.parse(run.stdout) as Array<{ data: Record<string, string> }>;
  return objects[0]?.data ?? {};
}

describe('vault vars source', { timeout: 120_000 }, () => {
  it('loads a KV v2 secret (rendered with the vars before it) and a KV v1 secret holding a data mapping', async () => {
    const dir = await project(
      `  - values:\n      region: eu\n${vaultSource('secret/data/app')}${vaultSource('secret/data/templated')}${vaultSource('kv1/app')}    targetPath: v1\n`,
      { password: '{{ password }}', port: '{{ db.port }}', url: '{{ url }}', v1: '{{ v1.fromV1 }}' },
    );
    expect(renderedData(await render(dir))).toEqual({ password: KV2_PASSWORD, port: '5432', url: 'db-eu', v1: KV1_VALUE });
  });

  it('reads in the namespace VAULT_NAMESPACE names', async () => {
    const dir = await project(vaultSource('secret/data/app'));
    const run = await render(dir, { VAULT_TOKEN: bao.rootToken, VAULT_NAMESPACE: 'team1' });
    expect(renderedData(run)).toEqual({ password: 'team1-password-value' });
  });

  it('skips a missing secret with ignoreMissing', async () => {
    const dir = await project(`  - values:\n      password: default\n${vaultSource('secret/data/nope')}    ignoreMissing: true\n`);
    expect(renderedData(await render(dir))).toEqual({ password: 'default' });
  });

  it('masks its values in errors, as a sensitive source', async () => {
    const dir = await project(vaultSource('secret/data/app'), { leak: "{{ raise('cannot connect with ' ~ password) }}" });
    const run = await render(dir);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot connect with *****');
    expect(run.stderr).not.toContain(KV2_PASSWORD);
  });

  it('fails with an error naming the source: missing path, missing data, bad token, no token, unreachable, bad answer or values', async () => {
    const where = (path: string, address = bao.address) => `deployment.yaml: vars[0]: vault ${path} at ${address}: `;
    const cases: Array<{ path: string; address?: string; env?: Record<string, string>; message: string }> = [
      { path: 'secret/data/nope', message: `${where('secret/data/nope')}no such secret (404)` },
      {
        path: 'secret/app',
        message: `${where('secret/app')}no such secret (404) (server warnings: Invalid path for a versioned K/V secrets engine.`,
      },
      {
        path: 'kv1/flat',
        message: `${where('kv1/flat')}the secret has no 'data' mapping; Kluctl's vault source reads a KV version 2 secret at <mount>/data/<name>`,
      },
      {
        path: 'secret/data/app',
        env: { VAULT_TOKEN: 'wrong-token-value' },
        message: `${where('secret/data/app')}permission denied (403): the token in VAULT_TOKEN is invalid or may not read this path`,
      },
      { path: 'secret/data/app', env: {}, message: `${where('secret/data/app')}permission denied (403): VAULT_TOKEN is not set` },
      {
        path: 'secret/data/app',
        address: 'http://127.0.0.1:1',
        message: `${where('secret/data/app', 'http://127.0.0.1:1')}the server cannot be reached: connect ECONNREFUSED 127.0.0.1:1`,
      },
      {
        path: 'secret/data/app',
        address: 'not a url',
        message: `${where('secret/data/app', 'not a url')}address 'not a url' is not a URL`,
      },
      // An OpenBao endpoint that answers plain text (its command line, root token included).
      { path: 'sys/pprof/cmdline', message: `${where('sys/pprof/cmdline')}the answer (status code 200) is not a Vault API JSON object` },
      { path: 'secret/data/broken', message: `${where('secret/data/broken')}the secret's values do not render or parse: ` },
    ];
    for (const { path, address, env, message } of cases) {
      const run = await render(await project(vaultSource(path, address)), env);
      expect(run.code, path).toBe(1);
      expect(run.stderr, path).toContain(message);
      expect(run.stderr).not.toContain('wrong-token-value');
      expect(run.stderr).not.toContain(NEIGHBOUR);
    }
  });
});

describe('vault vars source in the controller', { timeout: 300_000 }, () => {
  const NS = `gantry-e2e-vault-${randomBytes(3).toString('hex')}`;
  let repo: TestRepo | undefined;
  let stopController: (() => Promise<void>) | undefined;

  afterAll(async () => {
    await kubectl(['delete', 'kluctldeployments.gitops.gantry.dev', '--all', '-n', NS, '--wait=true', '--timeout=120s']).catch(
      () => undefined,
    );
    await stopController?.();
    await repo?.remove();
    await kubectl(['delete', 'namespace', NS, `${NS}-results`, '--ignore-not-found', '--wait=false']);
  });

  it('takes the token from VAULT_TOKEN when the operator allows it', async () => {
    await installCrds();
    await kubectl(['create', 'namespace', NS]);
    const controller = await startController(
      ['--namespace', NS, '--command-result-namespace', `${NS}-results`, '--allow-system-env-var', 'VAULT_TOKEN'],
      { VAULT_TOKEN: bao.rootToken },
    );
    stopController = controller.stop;
    repo = await createRepo({
      '.kluctl.yaml': `discriminator: ${NS}\ntargets:\n  - name: default\n`,
      'deployment.yaml': `vars:\n${vaultSource('secret/data/app')}deployments:\n  - path: app\n`,
      'app/configmap.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-vault\n  namespace: ${NS}\ndata:\n  value: "{{ password }}"\n`,
    });
    await applyObject(kluctlDeployment(NS, 'vault', repo.url));
    await waitReady(NS, 'vault', controller.log);
    expect(await configMapValue(NS, 'from-vault')).toBe(KV2_PASSWORD);
    expect(await controller.log()).not.toContain(bao.rootToken);
  });
});
