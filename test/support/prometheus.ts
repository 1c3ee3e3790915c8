/**
 * A real Prometheus (built from its Go module by setup) on a free 127.0.0.1 port, scraping a real HTTP target every
 * second: a metrics endpoint whose one gauge the test sets. For HEALTH gates, whose queries must hold.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { start } from '../../src/exec.ts';
import { freePorts } from '../../src/ports.ts';
import { waitFor } from '../../src/controller/test-support.ts';
import { stop } from './chart-server.ts';

export interface MetricsTarget {
  /** host:port, as a scrape config names it. */
  address: string;
  /** Sets the gauge `gantry_test_error_ratio` the target serves. */
  set(value: number): void;
  close(): Promise<void>;
}

export interface TestPrometheus {
  url: string;
  /** Resolves once the target's gauge has been scraped at `value` (the newest sample). */
  scraped(value: number): Promise<void>;
  close(): Promise<void>;
}

export async function startMetricsTarget(initial: number): Promise<MetricsTarget> {
  let value = initial;
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    response.end(`# TYPE gantry_test_error_ratio gauge\ngantry_test_error_ratio ${value}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (next) => void (value = next),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Starts Prometheus scraping `target` every second, and waits until it answers queries. */
export async function startPrometheus(target: string): Promise<TestPrometheus> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-prometheus-'));
  const { prometheus: port } = await freePorts(['prometheus']);
  const config = path.join(scratch, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      'scrape_configs:',
      '  - job_name: target',
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'),
  );
  const logFile = path.join(scratch, 'prometheus.log');
  const log = await open(logFile, 'a');
  const child: ChildProcess = start(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${path.join(scratch, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { logFd: log.fd },
  );
  await log.close();
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    'Prometheus ready',
    async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited: ${await readFile(logFile, 'utf8')}`);
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok;
    },
    30_000,
  );
  return {
    url,
    async scraped(value) {
      await waitFor(`the gauge scraped at ${value}`, async () => {
        const answer = (await (await fetch(`${url}/api/v1/query?query=gantry_test_error_ratio`)).json()) as {
          data: { result: Array<{ value: [number, string] }> };
        };
        return Number(answer.data.result[0]?.value[1]) === value;
      });
    },
    async close() {
      await stop(child);
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
