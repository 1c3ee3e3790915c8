/**
 * Verifies, before any worker starts, that the Python Gantry renders templates with exists and has exactly the
 * packages pinned in requirements.txt, so a broken setup gives one error saying what to install instead of a
 * crashing worker per request.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CommandError } from '../exec.ts';
import type { Tools } from '../tools.ts';

export const REQUIREMENTS_FILE = fileURLToPath(new URL('./requirements.txt', import.meta.url));

// 3.11: datetime.fromisoformat (time.parse_iso) reads ISO 8601 as Kluctl's embedded Python (3.14) does, `Z` included.
export const MINIMUM_PYTHON = [3, 11] as const;

// Prints {"python": [major, minor, micro], "packages": {name: version or null}} for the names given as arguments.
const PROBE = `
import json, sys
from importlib import metadata

def installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

print(json.dumps({"python": list(sys.version_info[:3]), "packages": {name: installed(name) for name in sys.argv[1:]}}))
`;

interface Probe {
  python: number[];
  packages: Record<string, string | null>;
}

/**
 * Checks the interpreter `tools` runs as `python` (a path, or a name looked up on its PATH).
 * @throws Error naming what is missing or of the wrong version and the command that installs it.
 */
export async function checkPython(tools: Tools): Promise<void> {
  const problem = await pythonProblem(tools);
  if (problem !== undefined) throw new Error(problem);
}

/** What checkPython would throw, or undefined when the interpreter has the pinned packages. */
export async function pythonProblem(tools: Tools): Promise<string | undefined> {
  const python = tools.paths.python;
  const required = await pinnedRequirements();
  let probe: Probe;
  try {
    probe = JSON.parse((await tools.run('python', ['-c', PROBE, ...required.keys()], { timeoutMs: 60_000 })).stdout) as Probe;
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    const reason = error.missingProgram ? `${python} not found` : `${python} failed: ${error.stderr.trim().split('\n').pop()}`;
    return (
      `${reason}: install Python ${MINIMUM_PYTHON.join('.')}+ and \`pip install -r ${REQUIREMENTS_FILE}\`, ` +
      'or point Gantry at a Python that has them (GANTRY_PYTHON)'
    );
  }
  const [major = 0, minor = 0] = probe.python;
  if (major < MINIMUM_PYTHON[0] || (major === MINIMUM_PYTHON[0] && minor < MINIMUM_PYTHON[1])) {
    return `${python} is Python ${probe.python.join('.')}; Gantry's templating needs ${MINIMUM_PYTHON.join('.')}+`;
  }
  const wrong = [...required].filter(([name, version]) => probe.packages[name] !== version);
  if (wrong.length === 0) return undefined;
  const found = wrong.map(([name, version]) => `${name} ${probe.packages[name] ?? 'missing'} (needs ${version})`);
  return `${python}: ${found.join(', ')}: run \`${python} -m pip install -r ${REQUIREMENTS_FILE}\``;
}

/** Package name -> exact version, from the `name==version` lines of requirements.txt. */
async function pinnedRequirements(): Promise<Map<string, string>> {
  const pins = new Map<string, string>();
  for (const line of (await readFile(REQUIREMENTS_FILE, 'utf8')).split('\n')) {
    const [name, version] = line.split('==').map((part) => part.trim());
    if (name && version) pins.set(name, version);
  }
  return pins;
}
