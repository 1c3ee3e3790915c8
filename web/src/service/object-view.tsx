/**
 * One object of the service as the cluster has it, in YAML (kube/object-yaml.tsx): the rendered object after apply,
 * with what the cluster added (status, defaults).
 */
import type { Component } from '../api/types.ts';
import { ObjectYaml } from '../kube/object-yaml.tsx';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { useLiveObject } from './live-object.ts';

export function ObjectView({ cluster, service, component }: { cluster: string; service: string; component: Component }) {
  const object = useLiveObject(cluster, service, component);
  const title = `${component.kind} ${component.namespace ? `${component.namespace}/` : ''}${component.name}`;
  return (
    <section className="object-view" aria-label={`Object ${title}`}>
      <h3>{title}</h3>
      {object.isPending && <LoadingPage what="the object from the cluster" />}
      {object.isError && <ErrorMessage error={object.error} />}
      {object.data && <ObjectYaml object={object.data} label={title} />}
    </section>
  );
}
