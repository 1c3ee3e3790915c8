/**
 * Everything a fresh machine needs beyond `npm ci` before tests, the demo or the local cluster can run:
 * the Go-built tools in the machine-wide cache, the Python env for templating, and `.cluster/bin` linking to them.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterLayout } from '../cluster/layout.ts';
import { pathExists, toolDir } from './cache.ts';
import { buildMissingTools } from './go-build.ts';
import { link, writePythonLauncher } from './links.ts';
import { ensurePythonEnv } from './python-env.ts';
import { type GoTool, KWOK_STAGES_DIR, TOOLS } from './tools.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REQUIREMENTS = join(REPO_ROOT, 'src', 'template', 'requirements.txt');

/**
 * Builds what is missing and links it; fast (no subprocess at all) when everything is in place.
 * @param report receives one line per step that does work (builds, env creation); nothing when all is cached.
 * @throws Error naming the missing prerequisite (go, python3) or the failed command.
 */
export async function setUpMachine(report: (line: string) => void): Promise<void> {
  const missing = [];
  for (const tool of TOOLS) if (!(await pathExists(toolBinary(tool)))) missing.push(tool);
  await buildMissingTools(missing, report);
  const python = await ensurePythonEnv(REQUIREMENTS, report);

  const layout = clusterLayout(REPO_ROOT);
  for (const tool of TOOLS) await link(join(layout.bin, tool.name), toolBinary(tool));
  const kwok = TOOLS.find((tool) => tool.name === 'kwok');
  if (kwok) await link(layout.kwokStages, join(toolDir(kwok.name, kwok.version), KWOK_STAGES_DIR));
  await writePythonLauncher(join(layout.bin, 'python3'), python);
}

function toolBinary(tool: GoTool): string {
  return join(toolDir(tool.name, tool.version), 'bin', tool.name);
}
