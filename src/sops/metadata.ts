/**
 * Recognising SOPS-encrypted files without decrypting them: sops stores its metadata (the data key encrypted to each
 * recipient, the MAC, the sops version) in a top-level `sops` mapping of the file's first document, and that is
 * where sops itself looks (a file whose first document has none is "sops metadata not found" to sops, and Kluctl
 * then treats it as plain text).
 */
import { parseYamlDocuments } from '../yaml.ts';
import { isPlainObject, type Values } from '../values.ts';

/** The sops stores Gantry decrypts: YAML (also multi-document) and JSON. */
export type SopsFormat = 'yaml' | 'json';

/** One key a file's data key is encrypted to; `id` is what sops prints for it (recipient, fingerprint, ARN, ...). */
export interface SopsKey {
  type: 'age' | 'PGP' | 'AWS KMS' | 'GCP KMS' | 'Azure Key Vault' | 'HashiCorp Vault';
  id: string;
}

/** The sops store for a file name as sops picks it from the extension: `.json` → json, `.yaml`/`.yml` → yaml. */
export function sopsFormatOf(file: string): SopsFormat | undefined {
  if (/\.json$/i.test(file)) return 'json';
  if (/\.ya?ml$/i.test(file)) return 'yaml';
  return undefined;
}

/**
 * The keys `text` is encrypted to, or undefined when it is not sops-encrypted (no `sops` mapping with `mac` and
 * `version` at the top of its first document, or not parseable at all: such a file is left to the next step to
 * report).
 */
export function sopsKeysOf(text: string, format: SopsFormat): SopsKey[] | undefined {
  // Cheap test first: every rendered manifest passes through here.
  if (!text.includes('sops') || !text.includes('mac')) return undefined;
  const metadata = topLevelSops(text, format);
  if (!metadata || typeof metadata['mac'] !== 'string' || metadata['version'] === undefined) return undefined;
  const groups = Array.isArray(metadata['key_groups']) ? metadata['key_groups'].filter(isPlainObject) : [metadata];
  return groups.flatMap(keysOfGroup);
}

/** True when `text` holds sops metadata (see sopsKeysOf). */
export function isSopsEncrypted(text: string, format: SopsFormat): boolean {
  return sopsKeysOf(text, format) !== undefined;
}

function topLevelSops(text: string, format: SopsFormat): Values | undefined {
  let first: unknown;
  try {
    first = format === 'json' ? JSON.parse(text) : parseYamlDocuments(text, 'sops')[0];
  } catch {
    return undefined;
  }
  const metadata = isPlainObject(first) ? first['sops'] : undefined;
  return isPlainObject(metadata) ? metadata : undefined;
}

/** Field names of sops' metadata per key type (sops' stores.Metadata). */
const KEY_FIELDS: ReadonlyArray<{ field: string; type: SopsKey['type']; id: (entry: Values) => unknown }> = [
  { field: 'age', type: 'age', id: (entry) => entry['recipient'] },
  { field: 'pgp', type: 'PGP', id: (entry) => entry['fp'] },
  { field: 'kms', type: 'AWS KMS', id: (entry) => entry['arn'] },
  { field: 'gcp_kms', type: 'GCP KMS', id: (entry) => entry['resource_id'] },
  { field: 'azure_kv', type: 'Azure Key Vault', id: (entry) => `${String(entry['vault_url'])}/keys/${String(entry['name'])}` },
  {
    field: 'hc_vault',
    type: 'HashiCorp Vault',
    id: (entry) => `${String(entry['vault_address'])}/${String(entry['engine_path'])}/${String(entry['key_name'])}`,
  },
];

function keysOfGroup(group: Values): SopsKey[] {
  return KEY_FIELDS.flatMap(({ field, type, id }) => {
    const entries = group[field];
    return Array.isArray(entries) ? entries.filter(isPlainObject).map((entry) => ({ type, id: String(id(entry)) })) : [];
  });
}
