/** Whether a request failed because the cluster does not serve the resource (404 on a list: no such CRD). */
import { ApiError } from '../../../src/client/fleet-client.ts';

export function isNotServed(error: Error | null): boolean {
  return error instanceof ApiError && error.status === 404;
}
