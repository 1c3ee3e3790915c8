/**
 * `npm run image -- [--push REPOSITORY] [--out DIR]`: builds Gantry's image without a container engine (see image.ts)
 * and pushes it to REPOSITORY as `REPOSITORY:<package version>` (with the credentials crane finds, e.g. those of
 * `docker login` or `crane auth login`) and/or writes it to DIR as an OCI image layout. Needs root. Progress goes to
 * stderr; the pushed reference with its digest, or the digest, to stdout.
 */
import { parseArgs } from 'node:util';
import { buildImage } from './image.ts';

const USAGE = 'usage: npm run image -- [--push REPOSITORY] [--out DIR] (at least one)';

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { push: { type: 'string' }, out: { type: 'string' } } });
  if (values.push === undefined && values.out === undefined) throw new Error(USAGE);
  const image = await buildImage({ ...values, report: (line) => console.error(`image: ${line}`) });
  process.stdout.write(`${image.pushed ? `${image.pushed}@` : ''}${image.digest}\n`);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
