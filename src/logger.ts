/**
 * Structured JSON logs for the controller: one pino logger per process, child loggers per component and per
 * reconcile. Field names follow controller-runtime's JSON logs as Flux and Kluctl print them (`level` as a word,
 * `ts` in ISO 8601, `msg`, `controller`, `namespace`, `name`, `reconcileID`), so existing log queries keep working.
 */
import { randomUUID } from 'node:crypto';
import { pino, type DestinationStream, type Level, type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** Lowest level written: trace, debug, info (default), warn, error, fatal. */
  level?: Level;
  /** Where lines go; stdout by default. Tests pass a stream to read the lines back. */
  destination?: DestinationStream;
}

/** The process's logger: one JSON object per line. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      messageKey: 'msg',
      base: undefined,
      timestamp: () => `,"ts":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination,
  );
}

/** A child logger for one reconcile of the object `namespace/name`, with a fresh reconcileID (a UUID). */
export function reconcileLogger(logger: Logger, object: { namespace: string; name: string }): { log: Logger; reconcileID: string } {
  const reconcileID = randomUUID();
  return { log: logger.child({ namespace: object.namespace, name: object.name, reconcileID }), reconcileID };
}
