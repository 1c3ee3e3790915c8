/**
 * The controller fetching over SSH with Kluctl's SSH credentials: a Secret with `identity` (private key) and
 * `known_hosts`, picked by spec.credentials.git, against a real SSH git server (test/support/ssh-git-server.ts) with
 * its own host key and one authorized client key. Host keys are pinned: a known_hosts with another key for the host
 * fails, and so does a Secret without known_hosts.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson } from '../support/cli.ts';
import {
  applyObject,
  installCrds,
  readyOf,
  startController,
  waitFor,
  waitNotReady as sharedWaitNotReady,
  waitReady as sharedWaitReady,
  type RunningController,
} from '../support/controller.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { createSshKey, startSshGitServer, type SshGitServer } from '../support/ssh-git-server.ts';

const NAMESPACE = `gantry-e2e-ctl-ssh-${randomBytes(3).toString('hex')}`;
const API = 'gitops.gantry.dev/v1beta1';

let controller: RunningController | undefined;
let server: SshGitServer | undefined;
let repo: TestRepo | undefined;
const deployments: string[] = [];

/** The controller's and the SSH server's logs, for timeouts. */
const logs = async () => `${(await controller?.log())?.slice(-3000)}\nssh-git-server:\n${server?.log()}`;
const waitReady = (name: string) => sharedWaitReady(NAMESPACE, name, logs);
const waitNotReady = (name: string) => sharedWaitNotReady(NAMESPACE, name);

/** Creates a Secret from `values` (no kubectl --from-literal: the values are multi-line). */
async function createSecret(name: string, values: Record<string, string>): Promise<void> {
  await applyObject({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NAMESPACE }, type: 'Opaque', stringData: values });
}

/** Applies a KluctlDeployment of the test repository over SSH with the credentials entry `credentials`. */
async function applySshDeployment(name: string, credentials: Record<string, unknown>): Promise<void> {
  deployments.push(name);
  await applyObject({
    apiVersion: API,
    kind: 'KluctlDeployment',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      interval: '10m',
      source: { git: { url: server!.url('remote.git') } },
      credentials: { git: [credentials] },
      target: 'default',
      context: 'default',
      prune: true,
      delete: true,
    },
  });
}

let wrongHostKey: Promise<Record<string, any>> | undefined;

/**
 * A KluctlDeployment whose Secret pins another key for the server's host (what a man in the middle, or a rebuilt
 * server, looks like to the client), once it is not Ready. Shared by the tests that look at that failure.
 */
function wrongHostKeyFailure(): Promise<Record<string, any>> {
  wrongHostKey ??= (async () => {
    const impostor = await createSshKey('not-the-server');
    const [keyType, keyData] = impostor.publicKey.split(' ');
    const port = server!.address.slice(server!.address.lastIndexOf(':') + 1);
    await createSecret('git-ssh-wrong-host-key', {
      identity: server!.clientPrivateKey,
      known_hosts: `[127.0.0.1]:${port} ${keyType} ${keyData}\n`,
    });
    await applySshDeployment('ssh-wrong-host-key', { host: '127.0.0.1', secretRef: { name: 'git-ssh-wrong-host-key' } });
    return waitNotReady('ssh-wrong-host-key');
  })();
  return wrongHostKey;
}

/** The base64 body lines of a PEM private key: what must never show in a status, event or log. */
function keyMaterial(privateKey: string): string[] {
  return privateKey.split('\n').filter((line) => line.length > 20 && !line.startsWith('-----'));
}

describe('controller: git over SSH', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await installCrds();
    await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }));
    repo = await createRepo({
      '.kluctl.yaml': 'discriminator: e2e-ctl-ssh\ntargets:\n  - name: default\n',
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-ssh-repo\n  namespace: ${NAMESPACE}\ndata:\n  a: b\n`,
    });
    server = await startSshGitServer(path.dirname(repo.remote));
    controller = await startController(['--namespace', NAMESPACE]);
  });
  afterAll(async () => {
    // KluctlDeployments first, while the controller runs to remove their finalizers (delete: true prunes the ConfigMap).
    for (const name of deployments.reverse()) {
      await kubectl([
        'delete',
        'kluctldeployments.gitops.gantry.dev',
        name,
        '-n',
        NAMESPACE,
        '--ignore-not-found',
        '--wait=true',
        '--timeout=120s',
      ]).catch(() => undefined);
    }
    await controller?.stop();
    await server?.close();
    await repo?.remove();
    await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=false']);
  });

  it('clones with the identity and known_hosts of the credentials Secret', async () => {
    await createSecret('git-ssh', { identity: server!.clientPrivateKey, known_hosts: `${server!.knownHosts}\n` });
    await applySshDeployment('ssh', { host: '127.0.0.1', secretRef: { name: 'git-ssh' } });
    const ready = await waitReady('ssh');
    expect(ready.status.lastDeployResult.newObjects).toBeGreaterThan(0);
    expect((await kubectlJson<Record<string, any>>(['get', 'configmap', 'from-ssh-repo', '-n', NAMESPACE])).data).toEqual({ a: 'b' });
  });

  it('refuses a server whose host key is not the one in known_hosts, naming the URL but not the key', async () => {
    const failed = await wrongHostKeyFailure();
    expect(readyOf(failed)?.message).toContain(server!.url('remote.git'));
    // The failure's Event is posted beside the status, not before it: wait for it, so the check below covers it.
    const events = await waitFor(
      async () => {
        const json = await kubectl(['get', 'events', '-n', NAMESPACE, '-o', 'json']);
        const items = (JSON.parse(json) as { items: Array<{ type: string; involvedObject: { name: string } }> }).items;
        return items.some((event) => event.type === 'Warning' && event.involvedObject.name === 'ssh-wrong-host-key') ? json : undefined;
      },
      30_000,
      async () => `a Warning Event of ssh-wrong-host-key\n${await logs()}`,
    );
    const everything = `${JSON.stringify(failed.status)}\n${events}\n${await controller!.log()}`;
    for (const line of keyMaterial(server!.clientPrivateKey)) expect(everything).not.toContain(line);
    expect(everything).not.toContain('PRIVATE KEY');
  });

  it("says that the host key did not match (ssh's reason, not only git's 'Could not read from remote repository')", async () => {
    const failed = await wrongHostKeyFailure();
    expect(readyOf(failed)?.message).toMatch(/Host key for \[127\.0\.0\.1\]:\d+ has changed.*Host key verification failed/);
  });

  it("fails with the documented message when the Secret has no known_hosts (matched by host '*')", async () => {
    await createSecret('git-ssh-no-known-hosts', { identity: server!.clientPrivateKey });
    await applySshDeployment('ssh-no-known-hosts', { host: '*', secretRef: { name: 'git-ssh-no-known-hosts' } });
    const failed = await waitNotReady('ssh-no-known-hosts');
    expect(readyOf(failed)?.message).toContain(
      `credentials Secret ${NAMESPACE}/git-ssh-no-known-hosts for ${server!.url('remote.git')}: SSH credentials need 'known_hosts' next to 'identity'`,
    );
    expect(JSON.stringify(failed.status)).not.toContain('PRIVATE KEY');
  });
});
