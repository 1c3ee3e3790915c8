/**
 * Chart sources on 127.0.0.1 for Helm tests, run by the test process itself (no outside network): a Helm chart
 * repository over HTTP (charts packaged with `helm package`, index.yaml built with `helm repo index`) and an OCI
 * registry (distribution's `registry` binary from .cluster/bin, charts pushed with `helm push --plain-http`), open or
 * behind basic authentication, which the OCI artifact tests push Kluctl projects to as well. Each is started and
 * stopped by the tests that use it.
 */
import type { ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, open, rm, stat, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { run, start } from '../../src/exec.ts';

/** A small chart the test describes: Chart.yaml is generated, `files` (path → content) are added to it. */
export interface TestChart {
  name: string;
  version: string;
  files?: Record<string, string>;
}

/** A ConfigMap template showing the chart's version and `.Values.value`, for charts that need some content. */
/**
 * A chart template of the ConfigMap `lookup-result`, whose `color` is that of the ConfigMap `lookup-source` in the
 * release's namespace as `lookup` reads it (`unknown` when there is none).
 */
export function lookupColorTemplate(): string {
  return [
    '{{- $source := lookup "v1" "ConfigMap" .Release.Namespace "lookup-source" }}',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: lookup-result',
    'data:',
    '  color: {{ if $source }}{{ $source.data.color }}{{ else }}unknown{{ end }}',
    '',
  ].join('\n');
}

export function configMapTemplate(name: string): string {
  return [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    `  name: ${name}`,
    'data:',
    '  chartVersion: {{ .Chart.Version | quote }}',
    '  value: {{ .Values.value | default "none" | quote }}',
    '',
  ].join('\n');
}

/** Writes the chart's folder below `parent` and returns it. */
export async function writeChart(parent: string, chart: TestChart): Promise<string> {
  const dir = path.join(parent, chart.name);
  await rm(dir, { recursive: true, force: true });
  const files = { 'Chart.yaml': `apiVersion: v2\nname: ${chart.name}\nversion: ${chart.version}\ntype: application\n`, ...chart.files };
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  }
  return dir;
}

/** `helm package`s the chart into `destination` and returns the archive's path. */
async function packageChart(chart: TestChart, destination: string, scratch: string): Promise<string> {
  const source = await mkdtemp(path.join(scratch, 'src-'));
  await run('helm', ['package', await writeChart(source, chart), '--destination', destination], { env: helmHome(scratch) });
  await rm(source, { recursive: true, force: true });
  return path.join(destination, `${chart.name}-${chart.version}.tgz`);
}

function helmHome(scratch: string): Record<string, string> {
  return {
    HELM_CONFIG_HOME: path.join(scratch, 'helm/config'),
    HELM_CACHE_HOME: path.join(scratch, 'helm/cache'),
    HELM_DATA_HOME: path.join(scratch, 'helm/data'),
  };
}

export interface ChartRepository {
  /** `http://127.0.0.1:<port>/charts` */
  url: string;
  /** Packages the charts into the repository and rebuilds its index. */
  publish(...charts: TestChart[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts an empty Helm chart repository on 127.0.0.1 (a free port) serving /charts/index.yaml and its archives,
 * behind HTTP basic auth when `auth` is given.
 */
export async function startChartRepository(auth?: { username: string; password: string }): Promise<ChartRepository> {
  const expected = auth && `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-chart-repo-'));
  const root = path.join(scratch, 'charts');
  await mkdir(root);
  const server = createHttpServer((request, response) => {
    if (expected && request.headers.authorization !== expected) {
      response.writeHead(401, { 'www-authenticate': 'Basic realm="charts"' }).end();
      return;
    }
    const file = path.join(root, decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname).replace(/^\/charts\/?/, ''));
    void stat(file).then(
      (info) => {
        if (!file.startsWith(root) || !info.isFile()) return void response.writeHead(404).end();
        response.writeHead(200, { 'content-length': info.size });
        createReadStream(file).pipe(response);
      },
      () => void response.writeHead(404).end(),
    );
  });
  const port = await listen(server);
  const url = `http://127.0.0.1:${port}/charts`;
  await writeFile(path.join(root, 'index.yaml'), 'apiVersion: v1\nentries: {}\n');
  return {
    url,
    async publish(...charts) {
      for (const chart of charts) await packageChart(chart, root, scratch);
      await run('helm', ['repo', 'index', root, '--url', url], { env: helmHome(scratch) });
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

export interface OciRegistry {
  /** `oci://127.0.0.1:<port>` */
  url: string;
  /** Pushes the chart to `<url>/<repoPath>/<name>:<version>` and returns `oci://…/<repoPath>/<name>`. */
  push(chart: TestChart, repoPath?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts distribution's registry on a free 127.0.0.1 port with storage in a temporary folder; with `auth`, behind
 * HTTP basic authentication (distribution's htpasswd auth, the password stored bcrypt-hashed as it requires).
 */
export async function startOciRegistry(auth?: { username: string; password: string }): Promise<OciRegistry> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-oci-registry-'));
  const port = await freePort();
  const config = path.join(scratch, 'config.yml');
  const htpasswd = path.join(scratch, 'htpasswd');
  if (auth) await writeFile(htpasswd, `${auth.username}:${await bcrypt.hash(auth.password, 10)}\n`);
  await writeFile(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${path.join(scratch, 'data')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      ...(auth ? ['auth:', '  htpasswd:', '    realm: gantry-e2e', `    path: ${htpasswd}`] : []),
      '',
    ].join('\n'),
  );
  const log = await open(path.join(scratch, 'registry.log'), 'a');
  const child = start('registry', ['serve', config], { logFd: log.fd });
  await log.close();
  await waitForRegistry(port, child, path.join(scratch, 'registry.log'));
  const url = `oci://127.0.0.1:${port}`;
  return {
    url,
    async push(chart, repoPath = 'charts') {
      const archive = await packageChart(chart, path.join(scratch, 'packages'), scratch);
      await run('helm', ['push', archive, `${url}/${repoPath}`, '--plain-http'], { env: helmHome(scratch) });
      return `${url}/${repoPath}/${chart.name}`;
    },
    async close() {
      await stop(child);
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

/** A port nothing listens on right now (the registry binds it a moment later). */
async function freePort(): Promise<number> {
  const server = createNetServer();
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function waitForRegistry(port: number, child: ChildProcess, logFile: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (child.exitCode !== null) break;
    // 401: up, and asking for credentials.
    const ok = await fetch(`http://127.0.0.1:${port}/v2/`).then(
      (response) => response.ok || response.status === 401,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stop(child);
  throw new Error(`the OCI registry did not start on port ${port}; see ${logFile}`);
}

/** Stops a child process started with start(), resolving when it has exited. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
