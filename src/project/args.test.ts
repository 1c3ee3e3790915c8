/**
 * The cases the project loader fuzzers (test/fuzz/kluctl-project.test.ts) found in args handling, kept as examples.
 */
import { describe, expect, it } from 'vitest';
import { parseArgs } from './args.ts';
import { withDefaultArgs } from './kluctl-project.ts';

describe('arg names reaching Object.prototype', () => {
  it('refuses `-a __proto__.polluted=[]` (it gave every object of the process a `polluted` key)', async () => {
    await expect(parseArgs(['__proto__.polluted=[]'])).rejects.toThrow(
      "invalid argument '__proto__.polluted=[]': '__proto__' cannot be part of an argument name",
    );
    await expect(parseArgs(['a.__proto__.polluted=1'])).rejects.toThrow(/'__proto__' cannot be part of an argument name/);
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('polluted');
  });

  it('refuses an arg definition named through __proto__ in .kluctl.yaml', () => {
    expect(() => withDefaultArgs({}, [{ name: '__proto__.polluted', default: 1 }], '/p/.kluctl.yaml')).toThrow(
      "/p/.kluctl.yaml: argument '__proto__.polluted': '__proto__' cannot be part of an argument name",
    );
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('polluted');
  });

  it('still sets dotted args and other odd names', async () => {
    expect(await parseArgs(['a.b=1', 'constructor=x', 'proto__=z'])).toEqual({ a: { b: 1 }, constructor: 'x', proto__: 'z' });
  });
});
