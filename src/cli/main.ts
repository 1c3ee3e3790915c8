export async function main(argv: string[]): Promise<number> {
  console.log('node', process.version, argv.slice(2));
  return 0;
}
