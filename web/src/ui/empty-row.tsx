/** The row a table shows when a filter (or the fleet) leaves it empty. */
export function EmptyRow({ columns, text = 'Nothing matches.' }: { columns: number; text?: string }) {
  return (
    <tr>
      <td colSpan={columns} className="muted empty">
        {text}
      </td>
    </tr>
  );
}
