/**
 * `npm run postgres -- up|down|status [-o json]`: the local PostgreSQL server the fleet's tests use (see
 * postgres.ts). `up` prints the connection URL on stdout.
 */
import { parseArgs } from 'node:util';
import { postgresDown, postgresStatus, postgresUp } from './postgres.ts';

const USAGE = 'usage: npm run postgres -- up | down | status [-o json]';

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: { output: { type: 'string', short: 'o' } } });
  const report = (line: string) => console.error(`postgres: ${line}`);
  switch (positionals.length === 1 ? positionals[0] : undefined) {
    case 'up':
      process.stdout.write(`${(await postgresUp(report)).url}\n`);
      return;
    case 'down':
      await postgresDown(report);
      return;
    case 'status': {
      const status = await postgresStatus();
      if (values.output === 'json') process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      else if (values.output === undefined) {
        const memory = status.rssBytes === undefined ? '' : `, ${(status.rssBytes / 1024 / 1024).toFixed(0)} MiB RSS`;
        process.stdout.write(
          `postgres: ${status.state}${status.port ? ` on 127.0.0.1:${status.port} (pid ${status.pid}${memory})` : ''}\n`,
        );
      } else throw new Error(`unknown output format ${values.output}; ${USAGE}`);
      return;
    }
    default:
      throw new Error(USAGE);
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
