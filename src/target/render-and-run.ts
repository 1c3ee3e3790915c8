/**
 * Rendering a target while a command already runs on it: a deploy or a diff reads the cluster (and takes the
 * target's lock) from the moment the target's discriminator and cluster are known, and applies nothing until the
 * render is done (see deployTarget in src/deploy/deploy.ts). The CLI runs its deploy and diff so (cli/options.ts);
 * a controller or an agent may too, from its own TargetRequest.
 */
import type { Cluster } from '../kube/cluster.ts';
import { requireCluster, type PreparedTarget, type PrepareOptions } from './prepare.ts';
import type { RenderedTarget } from './rendered-target.ts';

/** A target whose render is still running, and its discriminator, known before the render ends. */
export interface PendingRender {
  discriminator: string;
  rendered: Promise<RenderedTarget>;
}

/**
 * Starts a render with `prepare` (a prepareTarget call, its `onTarget` option given by this function) and runs
 * `command` on it from the moment its discriminator and cluster are known. The command's signal aborts when the
 * render fails (a lock still being waited for is given up) or `signal` does (SIGINT, SIGTERM); `signal` must be the
 * render's too, so that it stops the render as well.
 * @throws the render's error first (nothing was applied then), else the command's; Error when the target is
 *   rendered offline.
 */
export async function renderAndRun<R>(
  prepare: (onTarget: NonNullable<PrepareOptions['onTarget']>) => Promise<PreparedTarget>,
  signal: AbortSignal | undefined,
  command: (pending: PendingRender, cluster: Cluster, signal: AbortSignal) => Promise<R>,
): Promise<{ prepared: PreparedTarget; result: R }> {
  const known = Promise.withResolvers<{ discriminator: string; cluster: Cluster | undefined }>();
  const preparing = prepare((target, cluster) => known.resolve({ discriminator: target.discriminator, cluster }));
  const renderFailed = new AbortController();
  // A render that fails before its target is known fails the command at once; later, it aborts the command.
  preparing.catch((error: unknown) => {
    known.reject(error);
    renderFailed.abort(error);
  });
  const { discriminator, cluster: found } = await known.promise;
  const cluster = requireCluster({ cluster: found });
  const rendered = preparing.then((prepared) => prepared.rendered);
  // The command awaits the render, unless it failed before (a refused lock): its error is thrown below either way.
  rendered.catch(() => undefined);
  const stop = signal ? AbortSignal.any([renderFailed.signal, signal]) : renderFailed.signal;
  const [prepared, result] = await Promise.allSettled([preparing, command({ discriminator, rendered }, cluster, stop)]);
  if (prepared.status === 'rejected') throw prepared.reason;
  if (result.status === 'rejected') throw result.reason;
  return { prepared: prepared.value, result: result.value };
}
