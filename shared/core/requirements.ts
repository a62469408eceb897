import { InvalidRequirementError } from './errors.ts';
import type { Labels } from './labels.ts';
import { INTEGER, requirementProblem } from './requirement-problems.ts';

/** Node selector operators. `Gte`/`Lte` are Karpenter extensions (NodePool requirements only). */
export type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt' | 'Gte' | 'Lte';

export { OPERATORS } from './requirement-problems.ts';

/** One node selector requirement as written in a pod, NodePool or NodeClaim. */
export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: Operator;
  readonly values?: readonly string[];
  /** NodePool only: at least this many distinct values must remain across candidate instance types. */
  readonly minValues?: number;
}

/** Where requirements were read from, for error messages. */
export interface RequirementSource {
  readonly object: string;
  readonly field: string;
}

/**
 * The set of label states a node may have for one key: a set of values (or the complement of
 * one), optionally bounded by integer bounds, plus whether the label may be absent.
 *
 * Every operator is such a set: `In V` = V; `NotIn V` = absent or not in V; `Exists` = any value;
 * `DoesNotExist` = absent; `Gt n` = an integer value > n; `Lt n` = an integer value < n. That makes
 * intersection plain set intersection (commutative, associative) and emptiness exact.
 */
export class Requirement {
  private constructor(
    readonly key: string,
    /** True: `values` lists excluded values; false: `values` lists the allowed ones. */
    readonly complement: boolean,
    readonly values: ReadonlySet<string>,
    /** Exclusive lower bound on integer values (only with `complement`). */
    readonly greaterThan: number | undefined,
    /** Exclusive upper bound on integer values (only with `complement`). */
    readonly lessThan: number | undefined,
    /** The label may be missing from the node. */
    readonly allowsAbsent: boolean,
    readonly minValues: number | undefined,
  ) {}

  /** Anything, including absent. */
  static any(key: string): Requirement {
    return new Requirement(key, true, new Set(), undefined, undefined, true, undefined);
  }

  /** The label must be absent (`DoesNotExist`). */
  static absent(key: string): Requirement {
    return new Requirement(key, false, new Set(), undefined, undefined, true, undefined);
  }

  /** `key In values`. */
  static in(key: string, values: Iterable<string>, minValues?: number): Requirement {
    return new Requirement(key, false, new Set(values), undefined, undefined, false, minValues);
  }

  /**
   * Reads one selector requirement.
   * @throws InvalidRequirementError for an unknown operator, `In` without values, a bound that is
   *   not exactly one integer, values on `Exists`/`DoesNotExist`, or `minValues` out of range.
   */
  /** An integer value between the exclusive bounds given. */
  private static ranged(key: string, gt: number | undefined, lt: number | undefined): Requirement {
    return new Requirement(key, true, new Set(), gt, lt, false, undefined);
  }

  static parse(req: NodeSelectorRequirement, source: RequirementSource): Requirement {
    // The checks make no closure per call: parsing runs for every requirement of every plan.
    const problem = requirementProblem(req);
    if (problem !== undefined) {
      throw new InvalidRequirementError(source.object, source.field, `key ${req.key}: ${problem}`);
    }
    const { key, minValues } = req;
    const values = req.values ?? [];
    const bound = Number(values[0]);
    let result: Requirement;
    switch (req.operator as Operator) {
      case 'In':
        result = Requirement.in(key, values);
        break;
      case 'NotIn':
        result = new Requirement(key, true, new Set(values), undefined, undefined, true, undefined);
        break;
      case 'Exists':
        result = new Requirement(key, true, new Set(), undefined, undefined, false, undefined);
        break;
      case 'DoesNotExist':
        result = Requirement.absent(key);
        break;
      case 'Gt':
        result = Requirement.ranged(key, bound, undefined);
        break;
      case 'Gte':
        result = Requirement.ranged(key, bound - 1, undefined);
        break;
      case 'Lt':
        result = Requirement.ranged(key, undefined, bound);
        break;
      case 'Lte':
        result = Requirement.ranged(key, undefined, bound + 1);
        break;
    }
    return minValues === undefined ? result : result.withMinValues(minValues);
  }

  withMinValues(minValues: number | undefined): Requirement {
    return new Requirement(
      this.key,
      this.complement,
      this.values,
      this.greaterThan,
      this.lessThan,
      this.allowsAbsent,
      minValues,
    );
  }

  /** True when a node whose label `key` has `value` satisfies this requirement. */
  has(value: string): boolean {
    if (!this.withinBounds(value)) return false;
    return this.complement ? !this.values.has(value) : this.values.has(value);
  }

  /** True when a node with label value `value` (undefined = label absent) satisfies this. */
  admits(value: string | undefined): boolean {
    return value === undefined ? this.allowsAbsent : this.has(value);
  }

  private withinBounds(value: string): boolean {
    if (this.greaterThan === undefined && this.lessThan === undefined) return true;
    if (!INTEGER.test(value)) return false;
    const n = Number(value);
    return (
      (this.greaterThan === undefined || n > this.greaterThan) &&
      (this.lessThan === undefined || n < this.lessThan)
    );
  }

  /** Set intersection. `minValues` is the larger of the two. */
  intersect(other: Requirement): Requirement {
    if (other.key !== this.key) throw new Error(`intersect: keys differ (${this.key} vs ${other.key})`);
    const allowsAbsent = this.allowsAbsent && other.allowsAbsent;
    const minValues = maxDefined(this.minValues, other.minValues);
    if (this.complement && other.complement) {
      const values = new Set(this.values);
      for (const v of other.values) values.add(v);
      const gt = maxDefined(this.greaterThan, other.greaterThan);
      const lt = minDefined(this.lessThan, other.lessThan);
      return new Requirement(this.key, true, values, gt, lt, allowsAbsent, minValues);
    }
    const [finite, rest] = this.complement ? [other, this] : [this, other];
    const values = new Set<string>();
    for (const v of finite.values) if (rest.has(v) && finite.withinBounds(v)) values.add(v);
    return new Requirement(this.key, false, values, undefined, undefined, allowsAbsent, minValues);
  }

  /** True when no node can satisfy this requirement. */
  isEmpty(): boolean {
    if (this.allowsAbsent) return false;
    if (!this.complement) return this.values.size === 0;
    if (this.greaterThan !== undefined && this.lessThan !== undefined) {
      const span = this.lessThan - this.greaterThan - 1;
      if (span <= 0) return true;
      let excluded = 0;
      for (const v of this.values) if (this.withinBounds(v)) excluded += 1;
      return excluded >= span;
    }
    return false;
  }

  /** True when every node satisfies this requirement. */
  isAny(): boolean {
    return (
      this.complement &&
      this.allowsAbsent &&
      this.values.size === 0 &&
      this.greaterThan === undefined &&
      this.lessThan === undefined
    );
  }

  /** The allowed values, when the set is finite; undefined for a complement. */
  finiteValues(): readonly string[] | undefined {
    return this.complement ? undefined : [...this.values].sort();
  }

  /** The single allowed value, if the set is exactly one value and the label must exist. */
  singleValue(): string | undefined {
    if (this.complement || this.allowsAbsent || this.values.size !== 1) return undefined;
    return this.values.values().next().value;
  }

  /** Canonical selector form, one or more requirements whose conjunction equals this set. */
  toSelectors(): NodeSelectorRequirement[] {
    const key = this.key;
    const withMin = (r: NodeSelectorRequirement): NodeSelectorRequirement =>
      this.minValues === undefined ? r : { ...r, minValues: this.minValues };
    if (!this.complement) {
      if (this.values.size > 0) return [withMin({ key, operator: 'In', values: [...this.values].sort() })];
      return [{ key, operator: this.allowsAbsent ? 'DoesNotExist' : 'In', values: [] }];
    }
    const out: NodeSelectorRequirement[] = [];
    if (!this.allowsAbsent && this.greaterThan === undefined && this.lessThan === undefined) {
      out.push({ key, operator: 'Exists' });
    }
    if (this.values.size > 0) out.push({ key, operator: 'NotIn', values: [...this.values].sort() });
    if (this.greaterThan !== undefined) out.push({ key, operator: 'Gt', values: [String(this.greaterThan)] });
    if (this.lessThan !== undefined) out.push({ key, operator: 'Lt', values: [String(this.lessThan)] });
    return out.map(withMin);
  }

  /** Readable and canonical: `topology.kubernetes.io/zone In [a, b]`. */
  toString(): string {
    if (this.isAny()) return `${this.key} (any)`;
    if (this.isEmpty()) return `${this.key} (nothing)`;
    return this.toSelectors()
      .map(
        (s) => `${s.key} ${s.operator}${s.values && s.values.length > 0 ? ` [${s.values.join(', ')}]` : ''}`,
      )
      .join(' and ');
  }
}

function maxDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

/**
 * A conjunction of requirements, at most one per key. A key that is not present is
 * unconstrained. Immutable.
 */
export class Requirements {
  static readonly none = new Requirements(new Map());

  private constructor(private readonly byKey: ReadonlyMap<string, Requirement>) {}

  static of(reqs: Iterable<Requirement>): Requirements {
    const map = new Map<string, Requirement>();
    for (const r of reqs) {
      const prev = map.get(r.key);
      map.set(r.key, prev === undefined ? r : prev.intersect(r));
    }
    return new Requirements(map);
  }

  /** `key In [value]` for every label. */
  static fromLabels(labels: Labels): Requirements {
    return Requirements.of(Object.entries(labels).map(([k, v]) => Requirement.in(k, [v])));
  }

  /**
   * Reads a list of selector requirements (ANDed).
   * @throws InvalidRequirementError for a malformed requirement (field `<field>[i]`), or, when
   *   `rejectContradictions` is set, for two requirements on one key that nothing can satisfy.
   */
  static parse(
    list: readonly NodeSelectorRequirement[],
    source: RequirementSource,
    rejectContradictions = false,
  ): Requirements {
    const map = new Map<string, Requirement>();
    list.forEach((raw, i) => {
      const field = `${source.field}[${i}]`;
      const r = Requirement.parse(raw, { object: source.object, field });
      const prev = map.get(r.key);
      const merged = prev === undefined ? r : prev.intersect(r);
      if (rejectContradictions && merged.isEmpty()) {
        throw new InvalidRequirementError(
          source.object,
          field,
          `key ${r.key}: ${prev === undefined ? r.toString() : `${prev} contradicts ${r}`}; no node can satisfy it`,
        );
      }
      map.set(r.key, merged);
    });
    return new Requirements(map);
  }

  get(key: string): Requirement | undefined {
    return this.byKey.get(key);
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  get size(): number {
    return this.byKey.size;
  }

  keys(): IterableIterator<string> {
    return this.byKey.keys();
  }

  values(): IterableIterator<Requirement> {
    return this.byKey.values();
  }

  /** Adds or narrows one key. */
  with(req: Requirement): Requirements {
    const map = new Map(this.byKey);
    const prev = map.get(req.key);
    map.set(req.key, prev === undefined ? req : prev.intersect(req));
    return new Requirements(map);
  }

  /** Sets these keys to exactly these requirements (no intersection with the old ones). */
  replacing(reqs: readonly Requirement[]): Requirements {
    if (reqs.length === 0) return this;
    const map = new Map(this.byKey);
    for (const r of reqs) map.set(r.key, r);
    return new Requirements(map);
  }

  /** Without these keys. */
  without(...keys: readonly string[]): Requirements {
    const map = new Map(this.byKey);
    for (const k of keys) map.delete(k);
    return new Requirements(map);
  }

  /** Key-wise intersection; a key missing on one side is unconstrained there. Commutative. */
  intersect(other: Requirements): Requirements {
    if (other.byKey.size === 0) return this;
    if (this.byKey.size === 0) return other;
    const map = new Map<string, Requirement>();
    const keys = [...new Set([...this.byKey.keys(), ...other.byKey.keys()])].sort();
    for (const key of keys) {
      const a = this.byKey.get(key);
      const b = other.byKey.get(key);
      map.set(key, a === undefined ? (b as Requirement) : b === undefined ? a : a.intersect(b));
    }
    return new Requirements(map);
  }

  /** The first key (sorted) whose requirement is empty, if any. */
  firstEmpty(): Requirement | undefined {
    for (const key of [...this.byKey.keys()].sort()) {
      const r = this.byKey.get(key);
      if (r?.isEmpty()) return r;
    }
    return undefined;
  }

  /** True when a node with these labels satisfies every requirement. */
  matchesLabels(labels: Labels): boolean {
    for (const r of this.byKey.values()) if (!r.admits(labels[r.key])) return false;
    return true;
  }

  /** Labels implied by single-valued requirements. */
  singleValuedLabels(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const r of this.byKey.values()) {
      const v = r.singleValue();
      if (v !== undefined) out[r.key] = v;
    }
    return out;
  }

  /** Canonical selector list, sorted by key; unconstrained keys are left out. */
  toSelectors(): NodeSelectorRequirement[] {
    return [...this.byKey.keys()]
      .sort()
      .flatMap((k) => this.byKey.get(k)?.toSelectors() ?? [])
      .filter((s, _i, _a) => s !== undefined);
  }

  toString(): string {
    return [...this.byKey.keys()]
      .sort()
      .map((k) => this.byKey.get(k))
      .filter((r): r is Requirement => r !== undefined && !r.isAny())
      .map((r) => r.toString())
      .join(', ');
  }
}
