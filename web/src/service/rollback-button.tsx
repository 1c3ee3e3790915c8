/**
 * Rolling a service back to an earlier revision (which makes a new revision of the old one's source), once
 * confirmed. The service page then shows the new revision being applied.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { fleet } from '../api/fleet.ts';
import type { Service } from '../api/types.ts';
import { ConfirmButton } from '../ui/confirm-button.tsx';

export function RollbackButton({ service, revision }: { service: Service; revision: number }) {
  const queryClient = useQueryClient();
  const rollBack = useMutation({
    mutationFn: () => fleet.rollbackService(service.cluster, service.name, revision),
    onSuccess: (updated) => {
      queryClient.setQueryData(['services', service.cluster, service.name], updated);
      void queryClient.invalidateQueries({ queryKey: ['services'] });
    },
  });
  return (
    <ConfirmButton
      label={`Roll back to #${revision}`}
      confirmLabel={`Confirm rollback to #${revision}`}
      run={() => rollBack.mutateAsync()}
      pending={rollBack.isPending}
      error={rollBack.error}
    />
  );
}
