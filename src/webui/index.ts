/** `gantry webui`'s public entry point: the web UI for one kubeconfig context, without a fleet server. */
export { startWebUi } from './server.ts';
