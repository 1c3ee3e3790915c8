/**
 * `node scripts/package/main.ts`: builds what the npm package ships (see build.ts); npm runs it before `npm pack`.
 */
import { buildPackage } from './build.ts';

try {
  await buildPackage((line) => console.error(`package: ${line}`));
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
