/**
 * Runs src/yaml.ts calls for yaml-sandbox.ts in a worker thread, so a call that never returns can be stopped. Each
 * message `{ id, call, args }` is answered `{ id, value }` or `{ id, error: { name, message } }`, where `name` is the
 * error's class (YamlError, Error, RangeError, …) or UncloneableResult for a value a message cannot carry.
 */
import { parentPort } from 'node:worker_threads';
import { parseYaml, parseYamlDocuments, replaceScalar, toYaml, toYamlDocuments } from '../../../src/yaml.ts';

// The yaml library warns through process.emitWarning for each map with a collection as a key, which random text
// makes by the hundred; the parse result is what is checked.
process.emitWarning = () => undefined;

const calls = {
  parseYaml,
  parseYamlDocuments,
  replaceScalar,
  toYaml,
  toYamlDocuments,
  // Values nested deeper than a message can carry arrive as JSON text (JSON.parse does not recurse).
  toYamlJson: (json: string) => toYaml(JSON.parse(json)),
} as Record<string, (...args: never[]) => unknown>;

parentPort?.on('message', ({ id, call, args }: { id: number; call: string; args: never[] }) => {
  try {
    const value = (calls[call] as (...args: never[]) => unknown)(...args);
    try {
      parentPort?.postMessage({ id, value });
    } catch (error) {
      // A value the structured clone cannot carry is itself a finding (e.g. a function); report it as such.
      parentPort?.postMessage({ id, error: { name: 'UncloneableResult', message: (error as Error).message } });
    }
  } catch (error) {
    const { name, message } =
      error instanceof Error ? { name: error.constructor.name, message: error.message } : { name: typeof error, message: String(error) };
    parentPort?.postMessage({ id, error: { name, message } });
  }
});
