/** The KluctlDeployment controller role's public entry point: what `gantry controller run` starts. */
export { startKluctlController } from './kluctl-deployment/controller.ts';
