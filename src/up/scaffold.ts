/**
 * Writes generated files into a repository without ever overwriting a user's edit silently: `.gantry/up.json`
 * records the sha256 of each file as last written, so a re-run can tell a file the user edited (kept, and named)
 * from one only an older Gantry wrote (upgraded), as cruft and `plural up` keep templates apart from edits.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const RECORD_FILE = '.gantry/up.json';

/** What happened to each file, by path relative to the repository. */
export interface ScaffoldResult {
  /** New files. */
  created: string[];
  /** Files unedited since the last run whose generated content changed. */
  upgraded: string[];
  /** Files the user edited (or made) whose generated content differs: left as they are. */
  kept: string[];
  unchanged: string[];
}

interface UpRecord {
  files: Record<string, string>;
}

/** Writes `files` (path → content) below `dir`, file by file as the record allows, and updates the record. */
export async function scaffold(dir: string, files: Record<string, string>): Promise<ScaffoldResult> {
  const record = await readRecord(dir);
  const result: ScaffoldResult = { created: [], upgraded: [], kept: [], unchanged: [] };
  for (const [relative, content] of Object.entries(files)) {
    const target = path.join(dir, relative);
    const current = await readFile(target, 'utf8').catch(() => undefined);
    const wanted = sha256(content);
    if (current === undefined) result.created.push(relative);
    else if (sha256(current) === wanted) {
      result.unchanged.push(relative);
    } else if (record.files[relative] === sha256(current)) result.upgraded.push(relative);
    else {
      result.kept.push(relative);
      continue;
    }
    if (current !== content) {
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, content);
    }
    record.files[relative] = wanted;
  }
  await mkdir(path.join(dir, path.dirname(RECORD_FILE)), { recursive: true });
  await writeFile(path.join(dir, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`);
  return result;
}

async function readRecord(dir: string): Promise<UpRecord> {
  const text = await readFile(path.join(dir, RECORD_FILE), 'utf8').catch(() => undefined);
  if (text === undefined) return { files: {} };
  try {
    const parsed = JSON.parse(text) as Partial<UpRecord>;
    return { files: { ...parsed.files } };
  } catch (error) {
    throw new Error(`${path.join(dir, RECORD_FILE)}: not JSON (${(error as Error).message}); fix or delete it`, { cause: error });
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
