/** What a query shows: a spinner while it loads, its error when it failed, else `children` of its data. */
import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { ErrorMessage } from './error-message.tsx';
import { LoadingPage } from './spinner.tsx';

export function QueryView<T>({ query, what, children }: { query: UseQueryResult<T>; what: string; children: (data: T) => ReactNode }) {
  if (query.isPending) return <LoadingPage what={what} />;
  if (query.isError) return <ErrorMessage error={query.error} />;
  return <>{children(query.data)}</>;
}
