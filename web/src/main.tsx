/**
 * The UI's entry: one query client for the whole app (any 401 ends the session shown: the login page appears),
 * the router, the session gate and, once logged in, live updates.
 */
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { isUnauthenticated } from './api/fleet.ts';
import { App } from './app.tsx';
import { ME_KEY } from './session/session.tsx';
import './styles.css';

const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError: endSessionOn401 }),
  mutationCache: new MutationCache({ onError: endSessionOn401 }),
  defaultOptions: {
    // A 4xx does not get better by asking again; a dropped connection might.
    queries: { retry: (failures, error) => failures < 2 && !(error as { status?: number }).status },
  },
});

function endSessionOn401(error: Error): void {
  if (isUnauthenticated(error)) queryClient.setQueryData(ME_KEY, null);
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <BrowserRouter>
        <App />
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
