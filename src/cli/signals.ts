/**
 * How the long-running commands (controller, server, agent) end: on SIGTERM (Kubernetes stopping the pod) or SIGINT
 * (Ctrl-C) they log it, run their own `stop`, and return, so the process exits once nothing is left running.
 */
import type { Logger } from '../logger.ts';

export async function runUntilSignalled(log: Logger, stop: () => Promise<void>): Promise<void> {
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info({ signal }, 'shutting down');
  await stop();
}
