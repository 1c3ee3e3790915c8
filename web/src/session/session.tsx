/**
 * Who is logged in: GET /v1/me, answered from the HttpOnly session cookie the browser holds (the page never sees
 * it). No session, or one that ended (any call answering 401, see main.tsx), shows the login page in place of
 * whatever page was asked for, which then appears once logged in.
 */
import { type QueryClient, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext } from 'react';
import { fleet, isUnauthenticated, logIn, logOut } from '../api/fleet.ts';
import type { Identity } from '../api/types.ts';
import { LoadingPage } from '../ui/spinner.tsx';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoginPage } from './login-page.tsx';

export const ME_KEY = ['me'];

const IdentityContext = createContext<Identity | undefined>(undefined);

/** Renders `children` for a logged-in user, the login page otherwise. */
export function SessionGate({ children }: { children: ReactNode }) {
  const me = useQuery({ queryKey: ME_KEY, queryFn: currentIdentity, staleTime: Infinity });
  if (me.isPending) return <LoadingPage what="Gantry" />;
  if (me.isError) return <ErrorMessage error={me.error} />;
  if (!me.data) return <LoginPage />;
  return <IdentityContext.Provider value={me.data}>{children}</IdentityContext.Provider>;
}

export function useIdentity(): Identity {
  const identity = useContext(IdentityContext);
  if (!identity) throw new Error('useIdentity outside SessionGate');
  return identity;
}

/** Logs in. */
export function useLogIn() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ username, password }: { username: string; password: string }) => logIn(username, password),
    onSuccess: (identity) => {
      dropAllButMe(queryClient);
      queryClient.setQueryData(ME_KEY, identity);
    },
  });
}

export function useLogOut() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: logOut,
    onSuccess: () => {
      dropAllButMe(queryClient);
      queryClient.setQueryData(ME_KEY, null);
    },
  });
}

/** Forgets what was fetched as someone else; the identity's own query stays, as SessionGate is subscribed to it. */
function dropAllButMe(queryClient: QueryClient): void {
  queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== ME_KEY[0] });
}

/** The identity, or null when not logged in. */
async function currentIdentity(): Promise<Identity | null> {
  try {
    return await fleet.whoAmI();
  } catch (error) {
    if (isUnauthenticated(error)) return null;
    throw error;
  }
}
