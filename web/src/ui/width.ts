/** The width of an element as it is laid out, followed as the window resizes; undefined before the first layout. */
import { type RefCallback, useCallback, useState } from 'react';

export function useWidth<T extends HTMLElement>(): [RefCallback<T>, number | undefined] {
  const [width, setWidth] = useState<number>();
  const ref = useCallback((element: T | null) => {
    if (!element) return;
    const observer = new ResizeObserver(([entry]) => setWidth(entry?.contentRect.width));
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}
