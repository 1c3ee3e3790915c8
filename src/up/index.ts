/** `gantry up`'s public entry point: a local fleet made and torn down (see up.ts and local-runtime.ts). */
export { defaultStateDir, localDown } from './local-runtime.ts';
export { UP_NAMESPACE } from './repository.ts';
export { type Runtime, up, type UpResult } from './up.ts';
