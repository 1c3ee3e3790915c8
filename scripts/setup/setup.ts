/**
 * Everything a fresh machine needs beyond `npm ci` before tests, the demo or the local cluster can run:
 * the Go-built tools in the machine-wide cache, files of Go modules the tests use (Flux's GitRepository CRD), the
 * Python env for templating, PostgreSQL (Debian's package) for the fleet server's tests, `.cluster/bin` and
 * `.cluster/crds` linking to them, the web UI's build with Chromium (Debian's) for its browser tests, the CLI's
 * bundle (scripts/bundle/), and mmdebstrap (Debian's) for the image build.
 */
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterLayout, DEFAULT_CLUSTER } from '../cluster/layout.ts';
import { cliEngineConfig } from '../../src/engine-config.ts';
import { createPythonEnv } from '../../src/template/python-env.ts';
import { Tools } from '../../src/tools.ts';
import { pathExists, toolDir } from './cache.ts';
import { buildMissingTools, fetchMissingModuleFiles } from './go-build.ts';
import { link, writePythonLauncher } from './links.ts';
import { ensureDebianProgram } from './debian-package.ts';
import { MMDEBSTRAP } from '../image/root-fs.ts';
import { ensurePostgres, POSTGRES_PROGRAMS } from './postgres.ts';
import { type GoTool, KWOK_STAGES_DIR, MODULE_FILES, TOOLS } from './tools.ts';
import { ensureWebUi } from './web.ts';
import { buildCliBundleWhenStale } from '../bundle/build.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Builds what is missing and links it; fast (no subprocess at all) when everything is in place.
 * @param report receives one line per step that does work (builds, env creation); nothing when all is cached.
 * @throws Error naming the missing prerequisite (go, python3) or the failed command.
 */
export async function setUpMachine(report: (line: string) => void): Promise<void> {
  const missing = [];
  for (const tool of TOOLS) if (!(await pathExists(toolBinary(tool)))) missing.push(tool);
  await buildMissingTools(missing, report);
  const missingFiles = [];
  for (const entry of MODULE_FILES) if (!(await pathExists(toolDir(entry.name, entry.version)))) missingFiles.push(entry);
  await fetchMissingModuleFiles(missingFiles, report);
  const host = cliEngineConfig();
  const python = await createPythonEnv(new Tools(host.tools, host.childEnv), host.cacheDir, report);

  const layout = clusterLayout(DEFAULT_CLUSTER, REPO_ROOT);
  for (const tool of TOOLS) await link(join(layout.bin, tool.name), toolBinary(tool));
  const kwok = TOOLS.find((tool) => tool.name === 'kwok');
  if (kwok) await link(layout.kwokStages, join(toolDir(kwok.name, kwok.version), KWOK_STAGES_DIR));
  for (const entry of MODULE_FILES) {
    for (const file of entry.files) await link(join(layout.crds, basename(file.to)), join(toolDir(entry.name, entry.version), file.to));
  }
  await writePythonLauncher(join(layout.bin, 'python3'), python);
  const postgres = await ensurePostgres(report);
  for (const program of POSTGRES_PROGRAMS) await link(join(layout.bin, program), join(postgres, program));
  await ensureWebUi(report);
  await buildCliBundleWhenStale(report);
  await ensureDebianProgram(MMDEBSTRAP, 'mmdebstrap', 'the image build makes its Debian root file system with it', report);
}

function toolBinary(tool: GoTool): string {
  return join(toolDir(tool.name, tool.version), 'bin', tool.name);
}
