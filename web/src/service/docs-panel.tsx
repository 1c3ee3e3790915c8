/**
 * A service's docs (Plural's docsPath): the Markdown files below its docsPath at its current revision, one shown at a
 * time beside the list of all. Rendered by react-markdown, which builds React elements and never injects HTML: raw
 * HTML in a file is left out (skipHtml), and links keep only safe protocols (its default URL transform), since the
 * files come from a repository, not from Gantry.
 */
import { useState } from 'react';
import Markdown from 'react-markdown';
import { useServiceDocs } from '../api/queries.ts';
import type { Service } from '../api/types.ts';
import { QueryView } from '../ui/query-view.tsx';

export function DocsPanel({ service }: { service: Service }) {
  const docs = useServiceDocs(service.cluster, service.name);
  const [chosen, choose] = useState<string>();
  return (
    <QueryView query={docs} what="docs">
      {(found) => {
        if (found.files.length === 0)
          return (
            <p className="muted">
              No Markdown files below {found.docsPath} at revision {found.revision}.
            </p>
          );
        const shown = found.files.find((file) => file.path === chosen) ?? found.files[0]!;
        return (
          <div className="docs">
            <nav aria-label="Docs files">
              <ul>
                {found.files.map((file) => (
                  <li key={file.path}>
                    <button type="button" className={file.path === shown.path ? 'link current' : 'link'} onClick={() => choose(file.path)}>
                      {file.path}
                    </button>
                  </li>
                ))}
              </ul>
              {found.truncated && <p className="muted">More files left out (at most 100 files and 1 MiB are read).</p>}
            </nav>
            <article aria-label={`Doc ${shown.path}`} className="markdown">
              <Markdown skipHtml>{shown.content}</Markdown>
            </article>
          </div>
        );
      }}
    </QueryView>
  );
}
