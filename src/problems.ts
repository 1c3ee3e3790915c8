/**
 * An error made of several independent problems (every failing file of a render, every invalid field of a
 * project file). Reported as one entry per problem; a problem may span lines (a template error shows the failing
 * source line under its message).
 */
export class ProblemList extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ProblemList';
    this.problems = problems;
  }
}

/** The problems an error stands for: its list, or its message as one problem. */
export function problemsOf(error: unknown): string[] {
  if (error instanceof ProblemList) return error.problems;
  return [messageOf(error)];
}

/** The message of a thrown value: an Error's message, anything else (a string, a rejection reason) as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
