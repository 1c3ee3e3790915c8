/**
 * The cluster's secrets, made fresh by every `up`: the service-account signing key pair and the admin bearer
 * token, plus the kubeconfig that carries that token.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { toYaml } from '../../src/yaml.ts';

export interface ClusterCredentials {
  /** Directory the apiserver self-signs its serving certificate into (`apiserver.crt`, `apiserver.key`). */
  certDir: string;
  /** PEM RSA private key signing service-account tokens (apiserver and controller-manager). */
  serviceAccountKey: string;
  /** PEM public half, for the apiserver to verify service-account tokens. */
  serviceAccountPublicKey: string;
  /** The apiserver's static token file, mapping `token` to user admin in group system:masters. */
  tokenFile: string;
  token: string;
}

/** Writes fresh credentials under `<dataDir>/pki`. */
export async function writeCredentials(dataDir: string): Promise<ClusterCredentials> {
  const pki = join(dataDir, 'pki');
  await mkdir(pki, { recursive: true, mode: 0o700 });
  const keys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const credentials = credentialFiles(pki, randomBytes(32).toString('hex'));
  await writeFile(credentials.serviceAccountKey, keys.privateKey, { mode: 0o600 });
  await writeFile(credentials.serviceAccountPublicKey, keys.publicKey);
  // Format: token,user,uid,"group1,group2".
  await writeFile(credentials.tokenFile, `${credentials.token},admin,admin,"system:masters"\n`, { mode: 0o600 });
  return credentials;
}

/** The credentials an earlier writeCredentials left under `<dataDir>/pki` (to restart a component with them). */
export async function readCredentials(dataDir: string): Promise<ClusterCredentials> {
  const pki = join(dataDir, 'pki');
  const token = (await readFile(join(pki, 'tokens.csv'), 'utf8')).split(',')[0] ?? '';
  return credentialFiles(pki, token);
}

function credentialFiles(pki: string, token: string): ClusterCredentials {
  return {
    certDir: pki,
    serviceAccountKey: join(pki, 'service-account.key'),
    serviceAccountPublicKey: join(pki, 'service-account.pub'),
    tokenFile: join(pki, 'tokens.csv'),
    token,
  };
}

/**
 * A kubeconfig for `server` (https URL) trusting `caPem` (the apiserver's self-signed certificate, embedded so the
 * file stands alone) and authenticating with the admin `token`; its cluster and current context are called `name`
 * (`gantry-<cluster name>`), so that the kubeconfigs of several local clusters can be merged (KUBECONFIG=a:b).
 */
export function kubeconfigYaml(name: string, server: string, caPem: string, token: string): string {
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
    users: [{ name, user: { token } }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: 'default' } }],
    'current-context': name,
    preferences: {},
  });
}
