/** How many rows a table shows, beside its title: "2", or "1 of 2" when filtered. */
export function Count({ shown, total }: { shown: number; total: number }) {
  return <span className="count">{shown === total ? total : `${shown} of ${total}`}</span>;
}
