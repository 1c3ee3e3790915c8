/**
 * SOPS keys for a KluctlDeployment (`spec.decryption`, provider sops), taken from a Secret as Flux's and Kluctl's
 * controllers take them: every value of a key ending in `.agekey` is an age identity, every `.asc` an armored PGP
 * private key. age keys reach sops through SOPS_AGE_KEY; PGP keys are imported into a keyring of their own
 * (GNUPGHOME in a private temporary folder that `cleanup` removes).
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { KluctlDeployment } from '../../api/kluctl-deployment.ts';
import type { Cluster } from '../../kube/cluster.ts';
import { readSecret } from '../../kube/secrets.ts';
import type { SopsEnv } from '../../sops/decrypt.ts';
import type { Tools } from '../../tools.ts';

export interface DecryptionKeys {
  env: SopsEnv | undefined;
  cleanup(): Promise<void>;
}

/**
 * @throws Error naming the Secret for a provider other than sops, a missing Secret, or a PGP key gpg refuses.
 */
export async function decryptionKeys(deployment: KluctlDeployment, cluster: Cluster, tools: Tools): Promise<DecryptionKeys> {
  const decryption = deployment.spec.decryption;
  if (!decryption?.secretRef) return { env: undefined, cleanup: async () => undefined };
  if (decryption.provider !== 'sops') throw new Error(`decryption provider '${decryption.provider}' is not supported (only sops)`);
  const values = await readSecret(cluster, deployment.metadata.namespace, decryption.secretRef.name);
  const env: Record<string, string> = {};
  const ageKeys = Object.entries(values)
    .filter(([key]) => key.endsWith('.agekey'))
    .map(([, value]) => value.trim());
  if (ageKeys.length > 0) env['SOPS_AGE_KEY'] = ageKeys.join('\n');
  const pgpKeys = Object.entries(values).filter(([key]) => key.endsWith('.asc'));
  if (pgpKeys.length === 0) return { env, cleanup: async () => undefined };
  const home = await mkdtemp(path.join(os.tmpdir(), 'gantry-gnupg-'));
  await chmod(home, 0o700);
  const cleanup = async () => {
    await tools.run('gpgconf', ['--kill', 'gpg-agent'], { env: { GNUPGHOME: home } }).catch(() => undefined);
    await rm(home, { recursive: true, force: true });
  };
  try {
    for (const [key, armored] of pgpKeys) {
      await tools.run('gpg', ['--batch', '--import'], { input: armored, env: { GNUPGHOME: home } }).catch((error: Error) => {
        throw new Error(
          `Secret ${deployment.metadata.namespace}/${decryption.secretRef?.name}: key ${key} is not a PGP key gpg accepts: ${error.message.split('\n')[0]}`,
        );
      });
    }
  } catch (error) {
    await cleanup();
    throw error;
  }
  return { env: { ...env, GNUPGHOME: home }, cleanup };
}
