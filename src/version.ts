/** Gantry's version, from package.json: what the server's OpenAPI document and agents' pings report. */
import packageJson from '../package.json' with { type: 'json' };

export const GANTRY_VERSION: string = packageJson.version;

/** Gantry's image: one image for every role (controller, agent, server), tagged with the package version. */
export const GANTRY_IMAGE_REPOSITORY = 'ghcr.io/gantry-dev/gantry';
