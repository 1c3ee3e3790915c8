/**
 * What changed in the fleet, for browsers to refetch (the UI's live updates, GET /v1/events): a hint naming the
 * kind and the id or name, never the data itself, which the browser reads through the API with its own rights.
 * Every replica hears every change through the kick bus (kick-bus.ts), so a browser connected to one replica sees
 * an agent's report handled by another.
 */
import type { FleetChange } from '../api/events.ts';

/** This replica's subscribers (open event streams). */
export class FleetChanges {
  readonly #listeners = new Set<(change: FleetChange) => void>();

  /** @returns the unsubscribe function. */
  subscribe(listener: (change: FleetChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(change: FleetChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}
