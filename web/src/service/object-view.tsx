/**
 * One object of the service as the cluster has it, in YAML: the rendered object after apply, with what the cluster
 * added (status, defaults). managedFields are left out as noise; a Secret's values are masked even where the
 * cluster's RBAC lets the user read them.
 */
import { stringify } from 'yaml';
import type { Component } from '../api/types.ts';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { type KubeObject, useLiveObject } from './live-object.ts';
import { MASK } from './mask.ts';

export function ObjectView({ cluster, service, component }: { cluster: string; service: string; component: Component }) {
  const object = useLiveObject(cluster, service, component);
  const title = `${component.kind} ${component.namespace ? `${component.namespace}/` : ''}${component.name}`;
  return (
    <section className="object-view" aria-label={`Object ${title}`}>
      <h3>{title}</h3>
      {object.isPending && <LoadingPage what="the object from the cluster" />}
      {object.isError && <ErrorMessage error={object.error} />}
      {object.data && <pre className="code">{stringify(shown(object.data))}</pre>}
    </section>
  );
}

function shown(object: KubeObject): KubeObject {
  const { managedFields: _managedFields, ...metadata } = object.metadata ?? {};
  const copy: KubeObject = { ...object, metadata };
  if (object.kind === 'Secret') {
    for (const field of ['data', 'stringData']) {
      const values = object[field] as Record<string, unknown> | undefined;
      if (values) copy[field] = Object.fromEntries(Object.keys(values).map((key) => [key, MASK]));
    }
  }
  return copy;
}
