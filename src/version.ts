/** Gantry's version, from package.json: what the server's OpenAPI document and agents' pings report. */
import packageJson from '../package.json' with { type: 'json' };

export const GANTRY_VERSION: string = packageJson.version;
