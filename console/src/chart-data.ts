/** What the charts draw, computed from the API's columnar series (chart.tsx). */
/** Running sums across series, bucket by bucket; a bucket where every series so far is null stays null. */
export function stack(values: Array<Array<number | null>>): Array<Array<number | null>> {
  const out: Array<Array<number | null>> = [];
  values.forEach((vs, k) => {
    out.push(vs.map((v, i) => {
      const below = k ? out[k - 1]![i]! : null;
      return v === null && below === null ? null : (below ?? 0) + (v ?? 0);
    }));
  });
  return out;
}

/** Indices of values with no non-null neighbour: a line through them has no length. */
export function isolated(values: ArrayLike<number | null | undefined>): number[] {
  const has = (i: number) => i >= 0 && i < values.length && values[i] !== null && values[i] !== undefined;
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) if (has(i) && !has(i - 1) && !has(i + 1)) out.push(i);
  return out;
}
