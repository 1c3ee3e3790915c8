/** The events a NotificationRouter's names route: Plural's open list narrowed to those Gantry's fleet sends. */
import { describe, expect, it } from 'vitest';
import { InvalidSpec } from './fleet-object.ts';
import { routedEvents } from './notification-router.ts';

describe('routedEvents', () => {
  it('keeps the names the fleet sends, once each; none given is every event, as Plural', () => {
    expect(routedEvents(['service.update', 'pr.create', 'service.update', 'pipeline.update'])).toEqual([
      'service.update',
      'pipeline.update',
    ]);
    expect(routedEvents(undefined)).toEqual(['*']);
    expect(routedEvents([])).toEqual(['*']);
  });

  it('refuses a list of only names the fleet never sends: the router would route nothing', () => {
    expect(() => routedEvents(['pr.create', 'stack.run'])).toThrow(InvalidSpec);
    expect(() => routedEvents(['pr.create'])).toThrow(/sends none of pr\.create/);
  });
});
