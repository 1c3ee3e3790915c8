/**
 * A template that failed to render: undefined variable, syntax error, `raise()` call, missing include, or an
 * exception inside a filter. Reported per file by the Jinja2 worker, so one bad file does not hide the others.
 */
export class TemplateError extends Error {
  /** The template that failed, relative to the project root; for an error inside an included template, that file. */
  readonly file: string;
  /** 1-based line in `file`; undefined when the failure has no line (e.g. the file could not be read). */
  readonly line: number | undefined;
  /** The text of that line, trimmed. */
  readonly expression: string | undefined;
  /**
   * The message as Kluctl reports it: the exception's class and text (`UndefinedError: 'foo' is undefined`,
   * `TemplateError: <raise() message>`), or `template x.j2 not found`.
   */
  readonly reason: string;

  /** `message` reads `file:line: reason`, followed by the failing line indented on its own line. */
  constructor(file: string, line: number | undefined, reason: string, expression?: string) {
    const where = line === undefined ? file : `${file}:${line}`;
    super(`${where}: ${reason}${expression ? `\n    ${expression}` : ''}`);
    this.name = 'TemplateError';
    this.file = file;
    this.line = line;
    this.expression = expression;
    this.reason = reason;
  }
}
