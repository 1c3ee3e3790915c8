/**
 * Builds Go tools from the module proxy into the tool cache. Every build uses the same flags
 * (CGO off, -trimpath, stripped, local toolchain) so builds of different tools share Go's build cache.
 */
import { chmod, copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { run } from '../../src/exec.ts';
import { populateAtomically } from '../../src/cache-entry.ts';
import { toolDir } from './cache.ts';
import type { GoTool, ModuleFiles } from './tools.ts';

/** The parts of `go mod edit -json` output that are used here. */
export interface GoModFile {
  Go?: string;
  Godebug?: Array<{ Key: string; Value: string }>;
  Require?: Array<{ Path: string; Version: string }>;
  Replace?: Array<{ Old: { Path: string; Version?: string }; New: { Path: string; Version?: string } }>;
}

interface DownloadedModule {
  /** Extracted source tree in GOMODCACHE. */
  dir: string;
  goMod: GoModFile;
}

// GOTOOLCHAIN=local: never download another Go toolchain behind the user's back; fail with the local one instead.
const GO_ENV = { CGO_ENABLED: '0', GOTOOLCHAIN: 'local' };

async function go(args: string[], cwd?: string, env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await run('go', args, { cwd, env: { ...GO_ENV, ...env } });
  return stdout;
}

/**
 * Builds the tools that are not in the cache yet, calling `report` with one progress line per step.
 * @throws CommandError (naming the go command and carrying its stderr) when a build fails; tools built before
 *   the failure stay cached.
 */
export async function buildMissingTools(tools: readonly GoTool[], report: (line: string) => void): Promise<void> {
  if (tools.length === 0) return;
  await requireGo();
  const builder = new ToolBuilder(tools);
  try {
    for (const tool of tools) {
      const started = performance.now();
      report(`building ${tool.name} ${tool.version} from ${tool.module} ...`);
      await populateAtomically(toolDir(tool.name, tool.version), (dir) => builder.build(tool, dir));
      report(`built ${tool.name} ${tool.version} in ${((performance.now() - started) / 1000).toFixed(1)}s`);
    }
  } finally {
    await builder.cleanUp();
  }
}

/**
 * Copies the files of the module entries that are not in the cache yet (`go mod download` only, nothing is built).
 * @throws CommandError when a module cannot be downloaded; Error when a listed file is not in it.
 */
export async function fetchMissingModuleFiles(entries: readonly ModuleFiles[], report: (line: string) => void): Promise<void> {
  if (entries.length === 0) return;
  await requireGo();
  for (const entry of entries) {
    report(`fetching ${entry.files.map((file) => file.from).join(', ')} from ${entry.module}@${entry.version} ...`);
    await populateAtomically(toolDir(entry.name, entry.version), async (dir) => {
      const upstream = await downloadModule(`${entry.module}@${entry.version}`);
      await copyFiles(upstream.dir, dir, entry.files);
    });
  }
}

async function copyFiles(fromDir: string, toDir: string, files: ReadonlyArray<{ from: string; to: string }>): Promise<void> {
  for (const file of files) {
    await mkdir(dirname(join(toDir, file.to)), { recursive: true });
    await copyFile(join(fromDir, file.from), join(toDir, file.to));
  }
}

async function requireGo(): Promise<void> {
  try {
    await go(['version']);
  } catch (error) {
    throw new Error(
      'setup: the Go toolchain (go 1.26 or newer, on PATH) is needed to build kube-apiserver, etcd, kwok, helm and ' +
        `kustomize; install it from https://go.dev/dl/ (${(error as Error).message.split('\n')[0]})`,
    );
  }
}

/** Builds tools one at a time, preparing each upstream module (and wrapper module) once per run. */
class ToolBuilder {
  private readonly tools: readonly GoTool[];
  private readonly modules = new Map<string, Promise<DownloadedModule>>();
  private readonly wrappers = new Map<string, Promise<string>>();
  private readonly tempDirs: string[] = [];

  /** @param tools all tools this run will build, so a shared wrapper module covers every one of them. */
  constructor(tools: readonly GoTool[]) {
    this.tools = tools;
  }

  /** Writes `tool`'s binary to `<dir>/bin/<name>` and its extra files under `dir`. */
  async build(tool: GoTool, dir: string): Promise<void> {
    const upstream = await this.download(tool);
    const ldflags = ['-s', '-w', ...(tool.stamps?.(upstream.goMod) ?? []).map((stamp) => `-X ${stamp}`)].join(' ');
    const binary = join(dir, 'bin', tool.name);
    const flags = ['-trimpath', `-ldflags=${ldflags}`];
    if (tool.via === 'install') {
      // go install names the binary after the package's last element (minus a /vN suffix), which is tool.name.
      await go(['install', ...flags, `${tool.package}@${tool.version}`], undefined, { GOBIN: dirname(binary) });
    } else {
      const wrapper = await this.wrapper(tool, upstream);
      const resolve = tool.resolve === 'build' ? ['-mod=mod'] : [];
      await go(['build', ...resolve, ...flags, '-o', binary, tool.mainSource ? '.' : tool.package], wrapper);
    }
    await copyFiles(upstream.dir, dir, tool.files ?? []);
  }

  async cleanUp(): Promise<void> {
    await Promise.all(this.tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }

  private download(tool: GoTool): Promise<DownloadedModule> {
    const key = `${tool.module}@${tool.version}`;
    let module = this.modules.get(key);
    if (!module) {
      module = downloadModule(key);
      this.modules.set(key, module);
    }
    return module;
  }

  private wrapper(tool: GoTool, upstream: DownloadedModule): Promise<string> {
    const key = `${tool.module}@${tool.version}:${tool.mainSource ?? ''}`;
    let wrapper = this.wrappers.get(key);
    if (!wrapper) {
      // One wrapper serves all tools of a module, so it must import all their packages or `go mod tidy` leaves
      // out the dependencies of the others.
      const packages = this.tools
        .filter((other) => other.module === tool.module && other.version === tool.version && !other.mainSource)
        .map((other) => other.package);
      wrapper = mkdtemp(join(tmpdir(), 'gantry-gobuild-')).then(async (dir) => {
        this.tempDirs.push(dir);
        await writeWrapperModule(dir, tool, packages, upstream);
        return dir;
      });
      this.wrappers.set(key, wrapper);
    }
    return wrapper;
  }
}

async function downloadModule(moduleAtVersion: string): Promise<DownloadedModule> {
  const info = JSON.parse(await go(['mod', 'download', '-json', moduleAtVersion])) as { Dir: string; GoMod: string };
  const goMod = JSON.parse(await go(['mod', 'edit', '-json', info.GoMod])) as GoModFile;
  return { dir: info.Dir, goMod };
}

/**
 * A module that requires `tool.module` and imports `packages` (or holds `tool.mainSource`), repeating the
 * upstream settings a dependency's go.mod cannot pass on: its go version, its godebug defaults, and its replaces
 * of modules in folders of its own tree (redirected to `tool.treeVersion`, which `go install` cannot do). Without
 * `treeVersion` upstream's replaces are all dropped, so a module replaced by a folder of upstream's tree is taken at
 * the published version upstream requires. With `resolve: 'build'` its go.sum starts as upstream's and `go build -mod=mod` resolves the rest.
 */
async function writeWrapperModule(dir: string, tool: GoTool, packages: string[], upstream: DownloadedModule): Promise<void> {
  const lines = ['module gantry.dev/toolbuild', '', `go ${upstream.goMod.Go ?? '1.25.0'}`, ''];
  for (const { Key, Value } of upstream.goMod.Godebug ?? []) lines.push(`godebug ${Key}=${Value}`);
  lines.push('', `require ${tool.module} ${tool.version}`, '');
  for (const replace of treeReplaces(tool, upstream.goMod)) lines.push(`replace ${replace} => ${replace} ${tool.treeVersion}`);
  await writeFile(join(dir, 'go.mod'), `${lines.join('\n')}\n`);
  if (tool.mainSource) await writeFile(join(dir, 'main.go'), tool.mainSource);
  if (tool.resolve === 'build') {
    // Checksums of the modules upstream was released with; the proxy's checksum database may lack some of them.
    await copyFile(join(upstream.dir, 'go.sum'), join(dir, 'go.sum'));
    await chmod(join(dir, 'go.sum'), 0o644);
    return;
  }
  if (!tool.mainSource) {
    // The build tag keeps this file out of every build; `go mod tidy` still sees the import and keeps the requirement.
    const imports = packages.map((pkg) => `import _ "${pkg}"\n`).join('');
    await writeFile(join(dir, 'tools.go'), `//go:build tools\n\npackage tools\n\n${imports}`);
  }
  await go(['mod', 'tidy'], dir);
}

function treeReplaces(tool: GoTool, upstream: GoModFile): string[] {
  if (!tool.treeVersion) return [];
  return (upstream.Replace ?? []).filter((r) => r.New.Path.startsWith('./')).map((r) => r.Old.Path);
}
