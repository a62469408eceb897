/**
 * A real lower bound on the hourly cost of hosting a set of pods: the LP relaxation
 *
 *   minimise Σ_t price_t · x_t   subject to   Σ_t alloc_t[r] · x_t ≥ demand[r]  (r = cpu, memory, pods),  x ≥ 0
 *
 * where x_t is a (fractional) number of nodes of type t. Any real plan is a feasible integer
 * point of this LP (each node hosts at most its allocatable), so its cost is at least the LP
 * optimum. Solved exactly enough with a dense two-phase simplex (3 rows, Bland's rule).
 */
export function lpLowerBound(
  demand: readonly number[],
  types: readonly { readonly alloc: readonly number[]; readonly price: number }[],
): number {
  const m = demand.length;
  const n = types.length;
  // Columns: x_0..x_{n-1}, surplus s_0..s_{m-1}, artificial u_0..u_{m-1}; last column = rhs.
  const cols = n + 2 * m + 1;
  const rows: Float64Array[] = [];
  for (let r = 0; r < m; r++) {
    const row = new Float64Array(cols);
    for (let t = 0; t < n; t++) row[t] = types[t]?.alloc[r] ?? 0;
    row[n + r] = -1;
    row[n + m + r] = 1;
    row[cols - 1] = demand[r] ?? 0;
    rows.push(row);
  }
  const basis = Array.from({ length: m }, (_, r) => n + m + r);

  const run = (cost: (j: number) => number, allowed: (j: number) => boolean): void => {
    for (let iter = 0; iter < 10_000; iter++) {
      // Reduced costs: c_j − c_B · B⁻¹ A_j (the tableau rows already hold B⁻¹ A).
      let enter = -1;
      for (let j = 0; j < cols - 1; j++) {
        if (!allowed(j) || basis.includes(j)) continue;
        let reduced = cost(j);
        for (let r = 0; r < m; r++)
          reduced -= cost(basis[r] as number) * ((rows[r] as Float64Array)[j] as number);
        if (reduced < -1e-12) {
          enter = j;
          break; // Bland: first improving column
        }
      }
      if (enter < 0) return;
      let leave = -1;
      let best = Number.POSITIVE_INFINITY;
      for (let r = 0; r < m; r++) {
        const a = (rows[r] as Float64Array)[enter] as number;
        if (a <= 1e-12) continue;
        const ratio = ((rows[r] as Float64Array)[cols - 1] as number) / a;
        if (
          ratio < best - 1e-15 ||
          (Math.abs(ratio - best) <= 1e-15 && (basis[r] as number) < (basis[leave] as number))
        ) {
          best = ratio;
          leave = r;
        }
      }
      if (leave < 0) throw new Error('LP unbounded');
      const pivotRow = rows[leave] as Float64Array;
      const p = pivotRow[enter] as number;
      for (let j = 0; j < cols; j++) pivotRow[j] = (pivotRow[j] as number) / p;
      for (let r = 0; r < m; r++) {
        if (r === leave) continue;
        const row = rows[r] as Float64Array;
        const f = row[enter] as number;
        if (f === 0) continue;
        for (let j = 0; j < cols; j++) row[j] = (row[j] as number) - f * (pivotRow[j] as number);
      }
      basis[leave] = enter;
    }
    throw new Error('LP did not converge');
  };

  // Phase 1: drive the artificials out.
  run(
    (j) => (j >= n + m ? 1 : 0),
    () => true,
  );
  for (let r = 0; r < m; r++) {
    if ((basis[r] as number) >= n + m && ((rows[r] as Float64Array)[cols - 1] as number) > 1e-9) {
      throw new Error('LP infeasible: some resource is offered by no instance type');
    }
  }
  // Phase 2: real prices, artificials barred from entering.
  run(
    (j) => (j < n ? (types[j]?.price ?? 0) : 0),
    (j) => j < n + m,
  );
  let total = 0;
  for (let r = 0; r < m; r++) {
    const b = basis[r] as number;
    if (b < n) total += (types[b]?.price ?? 0) * ((rows[r] as Float64Array)[cols - 1] as number);
  }
  return total;
}

/**
 * maximise c·x subject to A x ≤ b, x ≥ 0, for b ≥ 0 (the origin is feasible). Dense tableau
 * simplex with Bland's rule. Returns the optimum and x.
 */
export function maximise(
  c: readonly number[],
  a: readonly (readonly number[])[],
  b: readonly number[],
): { value: number; x: number[] } {
  const m = a.length;
  const n = c.length;
  const cols = n + m + 1;
  const rows = a.map((row, r) => {
    const t = new Float64Array(cols);
    for (let j = 0; j < n; j++) t[j] = row[j] ?? 0;
    t[n + r] = 1;
    t[cols - 1] = b[r] ?? 0;
    return t;
  });
  const obj = new Float64Array(cols);
  for (let j = 0; j < n; j++) obj[j] = -(c[j] ?? 0);
  const basis = Array.from({ length: m }, (_, r) => n + r);
  for (let iter = 0; iter < 100_000; iter++) {
    let enter = -1;
    for (let j = 0; j < cols - 1; j++) {
      if ((obj[j] as number) < -1e-12) {
        enter = j;
        break;
      }
    }
    if (enter < 0) break;
    let leave = -1;
    let best = Number.POSITIVE_INFINITY;
    for (let r = 0; r < m; r++) {
      const v = (rows[r] as Float64Array)[enter] as number;
      if (v <= 1e-12) continue;
      const ratio = ((rows[r] as Float64Array)[cols - 1] as number) / v;
      if (
        ratio < best - 1e-12 ||
        (Math.abs(ratio - best) <= 1e-12 && (basis[r] as number) < (basis[leave] as number))
      ) {
        best = ratio;
        leave = r;
      }
    }
    if (leave < 0) throw new Error('LP unbounded');
    const pr = rows[leave] as Float64Array;
    const p = pr[enter] as number;
    for (let j = 0; j < cols; j++) pr[j] = (pr[j] as number) / p;
    for (const row of [...rows, obj]) {
      if (row === pr) continue;
      const f = row[enter] as number;
      if (f === 0) continue;
      for (let j = 0; j < cols; j++) row[j] = (row[j] as number) - f * (pr[j] as number);
    }
    basis[leave] = enter;
  }
  const x = new Array<number>(n).fill(0);
  basis.forEach((v, r) => {
    if (v < n) x[v] = (rows[r] as Float64Array)[cols - 1] as number;
  });
  return { value: obj[cols - 1] as number, x };
}

/**
 * A tighter valid lower bound: the LP relaxation of assigning pods to nodes, where a fraction
 * of a pod brings all its resources with it (unlike the aggregate LP, which may buy cpu on one
 * type and memory on another). Solved as its dual by column generation:
 *
 *   maximise Σ_s n_s·v_s   subject to   Σ_s z_s·v_s ≤ price_t for every pod bundle z that fits type t
 *
 * v_s is a per-pod "value"; a node type may not host pods worth more than its price. Whatever v
 * the loop ends with is scaled down until no type violates it, so the result is always a valid
 * lower bound (at convergence it is the LP optimum).
 *
 * `wholePods` tightens it, still validly: a bundle for type t may only hold shapes whose whole
 * pod fits t. Every real plan satisfies that (a pod runs on one node, which must fit all of it),
 * so its cost is still at least the optimum. Without it, a 4-cpu pod may be sliced into thirds on
 * 2-vCPU burstable nodes that could never host it. A shape no type can host is worth 0.
 */
export function assignmentLowerBound(
  shapes: readonly { readonly count: number; readonly req: readonly number[] }[],
  types: readonly { readonly alloc: readonly number[]; readonly price: number }[],
  options: { readonly wholePods?: boolean } = {},
): number {
  const S = shapes.length;
  const R = shapes[0]?.req.length ?? 0;
  const fitsWhole = (s: (typeof shapes)[number], t: (typeof types)[number]): boolean =>
    s.req.every((need, r) => need <= (t.alloc[r] ?? 0));
  // wholePods: a pod (or a fraction of it) may only go to a type that can host the whole pod.
  const allowed = (s: (typeof shapes)[number], t: (typeof types)[number]): boolean =>
    options.wholePods !== true || fitsWhole(s, t);
  // Bundle value of type t: max Σ v_s z_s s.t. Σ_s req_s z_s ≤ alloc_t, over the allowed shapes.
  const price = (v: readonly number[], t: (typeof types)[number]): { value: number; x: number[] } => {
    const idx = shapes.flatMap((s, i) => (allowed(s, t) ? [i] : []));
    if (idx.length === 0) return { value: 0, x: new Array<number>(S).fill(0) };
    const sub = maximise(
      idx.map((i) => v[i] ?? 0),
      Array.from({ length: R }, (_, r) => idx.map((i) => shapes[i]?.req[r] ?? 0)),
      t.alloc,
    );
    const x = new Array<number>(S).fill(0);
    idx.forEach((i, k) => {
      x[i] = sub.x[k] ?? 0;
    });
    return { value: sub.value, x };
  };
  const constraints: number[][] = [];
  const limits: number[] = [];
  // Start: every shape alone on its best type.
  for (let s = 0; s < S; s++) {
    let bestRatio = Number.POSITIVE_INFINITY;
    let bestCount = 0;
    for (const t of types) {
      if (!allowed(shapes[s] as (typeof shapes)[number], t)) continue;
      let fit = Number.POSITIVE_INFINITY;
      for (let r = 0; r < R; r++) {
        const need = shapes[s]?.req[r] ?? 0;
        if (need > 0) fit = Math.min(fit, (t.alloc[r] ?? 0) / need);
      }
      if (fit > 0 && Number.isFinite(fit) && t.price / fit < bestRatio) {
        bestRatio = t.price / fit;
        bestCount = fit;
      }
    }
    const row = new Array<number>(S).fill(0);
    if (bestCount === 0) {
      row[s] = 1;
      constraints.push(row);
      limits.push(0);
      continue;
    }
    row[s] = bestCount;
    constraints.push(row);
    limits.push(bestCount * bestRatio);
  }
  const counts = shapes.map((s) => s.count);
  let v = new Array<number>(S).fill(0);
  for (let round = 0; round < 200; round++) {
    v = maximise(counts, constraints, limits).x;
    let added = 0;
    for (const t of types) {
      const { value, x } = price(v, t);
      if (value > t.price * (1 + 1e-9)) {
        constraints.push(x);
        limits.push(t.price);
        added += 1;
      }
    }
    if (added === 0) break;
  }
  // Make v feasible for every type (exactly, not just up to the loop's tolerance).
  let scale = 1;
  for (const t of types) {
    const { value } = price(v, t);
    if (value > 0) scale = Math.min(scale, t.price / value);
  }
  return scale * counts.reduce((sum, n, s) => sum + n * (v[s] ?? 0), 0);
}
