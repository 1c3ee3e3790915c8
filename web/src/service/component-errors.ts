/**
 * Which object an agent's error is about: the agent words an object's error as `namespace/Kind/name: message`
 * (`Kind/name: message` for cluster-scoped ones), so the tree can show it beside that object; the rest are the
 * service's own (a render or download failure) and show in its header.
 */
import type { Component, Service } from '../api/types.ts';

type ServiceError = Service['errors'][number];

interface SortedErrors {
  /** By componentKey, the message without the object's prefix. */
  byObject: Map<string, string[]>;
  general: ServiceError[];
}

export function componentKey(component: Pick<Component, 'namespace' | 'kind' | 'name'>): string {
  return component.namespace ? `${component.namespace}/${component.kind}/${component.name}` : `${component.kind}/${component.name}`;
}

export function sortErrors(service: Service): SortedErrors {
  const keys = new Set(service.components.map(componentKey));
  const byObject = new Map<string, string[]>();
  const general: ServiceError[] = [];
  for (const error of service.errors) {
    const key = [...keys].find((candidate) => error.message.startsWith(`${candidate}: `));
    if (key === undefined) general.push(error);
    else byObject.set(key, [...(byObject.get(key) ?? []), error.message.slice(key.length + 2)]);
  }
  return { byObject, general };
}
