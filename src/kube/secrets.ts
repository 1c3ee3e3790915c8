/**
 * Reading Secrets as plain strings (their base64 `data` decoded, `stringData` never comes back from the API).
 */
import type { Cluster } from './cluster.ts';

/**
 * The decoded values of Secret `namespace/name`.
 * @throws Error naming the Secret when it does not exist.
 */
export async function readSecret(cluster: Cluster, namespace: string, name: string): Promise<Record<string, string>> {
  const secret = await cluster.get({ group: '', version: 'v1', kind: 'Secret', namespace, name });
  if (!secret) throw new Error(`Secret ${namespace}/${name} not found`);
  const data = (secret['data'] as Record<string, string> | undefined) ?? {};
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]));
}
