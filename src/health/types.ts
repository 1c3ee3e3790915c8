/**
 * Where an object stands on its way to what its spec asks for:
 * - `Ready`: nothing left to wait for;
 * - `InProgress`: a controller is still working on it (or has not looked at it yet), so waiting may still end well;
 * - `Failed`: the controller has given up, so waiting longer cannot help.
 */
export type ReadinessStatus = 'Ready' | 'InProgress' | 'Failed';

/**
 * The readiness of one object. `message` is a short human reason, meant to be printed after the object's ref when a
 * wait times out (e.g. `Pending: waiting for a volume to be provisioned by ebs.csi.aws.com`); for Ready it is a short
 * summary or empty.
 */
export type Readiness = { status: ReadinessStatus; message: string };

export function ready(message = ''): Readiness {
  return { status: 'Ready', message };
}

export function inProgress(message: string): Readiness {
  return { status: 'InProgress', message };
}

export function failed(message: string): Readiness {
  return { status: 'Failed', message };
}
