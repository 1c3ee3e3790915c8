/**
 * An object as the cluster has it, in YAML: managedFields left out as noise, and a Secret's values masked even
 * where the cluster's RBAC lets the user read them (they would be on screen, and in screenshots, otherwise).
 */
import { stringify } from 'yaml';
import { MASK } from '../service/mask.ts';
import type { KubeObject } from './kube-object.ts';

export function ObjectYaml({ object, label }: { object: KubeObject; label: string }) {
  return (
    <pre className="code" aria-label={label}>
      {stringify(shown(object))}
    </pre>
  );
}

function shown(object: KubeObject): KubeObject {
  const { managedFields: _managedFields, ...metadata } = object.metadata;
  const copy: KubeObject = { ...object, metadata };
  if (object.kind === 'Secret') {
    for (const field of ['data', 'stringData']) {
      const values = object[field] as Record<string, unknown> | undefined;
      if (values) copy[field] = Object.fromEntries(Object.keys(values).map((key) => [key, MASK]));
    }
  }
  return copy;
}
