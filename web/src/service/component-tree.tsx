/** The service's objects grouped by namespace, then kind: each with its state, whether it is synced, its errors. */
import type { Component, Service } from '../api/types.ts';
import { componentHealth } from '../health.ts';
import { StatusBadge } from '../ui/status-badge.tsx';
import { componentKey, sortErrors } from './component-errors.ts';

export function ComponentTree(props: { service: Service; selected: Component | undefined; onSelect: (component: Component) => void }) {
  const errors = sortErrors(props.service).byObject;
  return (
    <ul className="tree" role="tree" aria-label="Components">
      {[...grouped(props.service.components)].map(([namespace, kinds]) => (
        <li key={namespace} role="treeitem" aria-expanded="true">
          <details open>
            <summary>{namespace ? `Namespace ${namespace}` : 'Cluster-scoped'}</summary>
            <ul role="group">
              {[...kinds].map(([kind, components]) => (
                <li key={kind} role="treeitem" aria-expanded="true">
                  <details open>
                    <summary>
                      {kind} <span className="count">{components.length}</span>
                    </summary>
                    <ul role="group">
                      {components.map((component) => (
                        <ObjectNode
                          key={componentKey(component)}
                          component={component}
                          errors={errors.get(componentKey(component)) ?? []}
                          selected={component === props.selected}
                          onSelect={() => props.onSelect(component)}
                        />
                      ))}
                    </ul>
                  </details>
                </li>
              ))}
            </ul>
          </details>
        </li>
      ))}
    </ul>
  );
}

function ObjectNode(props: { component: Component; errors: string[]; selected: boolean; onSelect: () => void }) {
  const { component } = props;
  return (
    <li
      role="treeitem"
      aria-selected={props.selected}
      className={props.selected ? 'selected' : undefined}
      data-object={componentKey(component)}
    >
      <button type="button" className="object" onClick={props.onSelect}>
        <span className="object-name">{component.name}</span>
        <StatusBadge {...componentHealth(component)} />
        {component.drift ? (
          <DriftTag drift={component.drift} />
        ) : (
          !component.synced && (
            <span className="tag warn" title="the last sync did not apply it">
              not synced
            </span>
          )
        )}
      </button>
      {props.errors.map((error, index) => (
        <p key={index} className="error object-error">
          {error}
        </p>
      ))}
    </li>
  );
}

/** What the agent reported of an object that drifted: deleted, changed (which fields, by whom), or in conflict. */
function DriftTag({ drift }: { drift: NonNullable<Component['drift']> }) {
  const by = drift.managers.length > 0 ? ` by ${drift.managers.join(', ')}` : '';
  const fields = drift.fields.join(', ');
  switch (drift.state) {
    case 'MISSING':
      return (
        <span className="tag warn" data-drift="MISSING" title="deleted in the cluster since the agent applied it">
          deleted in the cluster
        </span>
      );
    case 'CHANGED':
      return (
        <span className="tag warn" data-drift="CHANGED" title={`changed in the cluster since the agent applied it: ${fields}${by}`}>
          changed: {fields}
          {by}
        </span>
      );
    case 'CONFLICT':
      return (
        <span
          className="tag warn"
          data-drift="CONFLICT"
          title={`another field manager keeps these fields; the agent no longer repairs them: ${fields}${by}`}
        >
          conflict: {fields}
          {by}
        </span>
      );
  }
}

/** Namespace → kind → objects, each level sorted by name; cluster-scoped objects ('' namespace) first. */
function grouped(components: readonly Component[]): Map<string, Map<string, Component[]>> {
  const sorted = [...components].sort(
    (a, b) => a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name),
  );
  const namespaces = new Map<string, Map<string, Component[]>>();
  for (const component of sorted) {
    const kinds = namespaces.get(component.namespace) ?? new Map<string, Component[]>();
    kinds.set(component.kind, [...(kinds.get(component.kind) ?? []), component]);
    namespaces.set(component.namespace, kinds);
  }
  return namespaces;
}
