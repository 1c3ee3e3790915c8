/**
 * The service's objects as a tree (namespace, kind, object) with each one's state and errors, and the selected
 * object as the cluster has it. The selection is in the URL (?object=…).
 */
import { useSearchParams } from 'react-router';
import type { Service } from '../api/types.ts';
import { componentKey } from './component-errors.ts';
import { ComponentTree } from './component-tree.tsx';
import { ObjectView } from './object-view.tsx';

export function ComponentsPanel({ service }: { service: Service }) {
  const [params, setParams] = useSearchParams();
  const selected = service.components.find((component) => componentKey(component) === params.get('object'));
  if (service.components.length === 0)
    return <p className="muted">No objects reported yet: the agent reports them once it has applied the service.</p>;
  return (
    <div className="split">
      <ComponentTree service={service} selected={selected} onSelect={(component) => setParams({ object: componentKey(component) })} />
      {selected ? (
        <ObjectView cluster={service.cluster} service={service.name} component={selected} />
      ) : (
        <p className="muted placeholder">Select an object to see it as the cluster has it.</p>
      )}
    </div>
  );
}
