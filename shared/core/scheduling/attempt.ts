// One attempt to place a pod under one relaxation state: existing and in-flight capacity first,
// then the NodeClaims planned so far by how much more they would cost, then a new NodeClaim from
// each NodePool in turn. The scan over the bins skips what the headroom index proves full.
import type { Pod } from '../pod.ts';
import { type FitScoring, resourceFitScore, scoredRequests } from '../resource-fit-score.ts';
import type { PoolReason } from '../scheduling-types.ts';
import { BLOCK_MASK, BLOCK_SHIFT } from './headroom.ts';
import { type Bin, type Effective, type Probe, target } from './model.ts';
import type { NewClaims } from './new-claims.ts';
import { commitClaim, commitExisting, probe } from './placing.ts';
import type { SolveState } from './solve-state.ts';
import { dimOf, fits, type Vec } from './vectors.ts';

/** How many planned NodeClaims that can take a pod are compared on cost before choosing. */
const CLAIM_WINDOW = 8;

/** Places the pod and returns undefined, or returns one reason per NodePool. */
export function attempt(
  state: SolveState,
  newClaims: NewClaims,
  pod: Pod,
  ec: Effective,
): readonly PoolReason[] | undefined {
  if (ec.contradiction !== undefined) {
    const reason = ec.contradiction;
    return state.templates.length === 0
      ? [{ nodePool: '', reason }]
      : state.templates.map((t) => ({ nodePool: t.pool.name, reason }));
  }
  // Existing and in-flight capacity first (it is already paid for), then the planned NodeClaims
  // in creation order. Among the first few planned claims that can take the pod, the one whose
  // cheapest launchable type gets the least more expensive wins, unless a fresh NodeClaim
  // would cost less than that increase (Karpenter always prefers a planned claim; growing a
  // claim into a much pricier instance type is how it ends up with oversized nodes).
  if (newClaims.takeReserved(pod, ec)) return undefined;
  // Pending pods that must join this one on its node (required hostname pod affinity): first
  // look for a place where they fit beside it, a new NodeClaim if need be; failing that, the pod
  // is placed as any other and they follow it as far as room allows.
  const need = state.partners.need(ec.shape);
  if (need !== undefined && scan(state, newClaims, pod, ec, need) === undefined) return undefined;
  return scan(state, newClaims, pod, ec, undefined);
}

/**
 * One scan over the bins and then the NodePools. With `need` (the pod's requests plus those of
 * the pods that must join it), only places with room for all of it count, and nothing is
 * reported: the caller scans again without it.
 */
function scan(
  state: SolveState,
  newClaims: NewClaims,
  pod: Pod,
  ec: Effective,
  need: Vec | undefined,
): readonly PoolReason[] | undefined {
  const bins = state.bins;
  let contiguous = true;
  const options: Probe[] = [];
  const req = need ?? ec.shape.vec;
  if (ec.rejected.length < bins.length) {
    const grown = new Uint8Array(Math.max(bins.length * 2, 64));
    grown.set(ec.rejected);
    ec.rejected = grown;
  }
  const rejected = ec.rejected;
  const zero = new Float64Array(req.length);
  let blockHadFit = false;
  // Under a scoring strategy every existing bin that can take the pod is scored before the best
  // is taken; planned claims come after them all.
  const scoring = state.existingNodeScoring;
  let best: Probe | undefined;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (let i = ec.skip; i < bins.length; i++) {
    if (best !== undefined && i >= state.existingEnd) break;
    if ((i & BLOCK_MASK) === 0) {
      const skip = skipBlock(
        state,
        i,
        i > ec.skip && !blockHadFit,
        options.length >= CLAIM_WINDOW,
        req,
        zero,
      );
      blockHadFit = false;
      if (skip) {
        contiguous = false;
        i += BLOCK_MASK;
        continue;
      }
    }
    if (rejected[i] === 1) {
      if (contiguous) ec.skip = i + 1;
      continue;
    }
    const bin = bins[i] as Bin;
    // A planned claim where the pod would not fit its current cheapest type costs extra; only
    // the first few of those are probed and compared, the scan goes on for a free fit.
    if (
      bin.kind === 'claim' &&
      options.length >= CLAIM_WINDOW &&
      fits(bin.used, req, bin.maxAlloc as Vec) &&
      !fits(bin.used, req, target(bin).alloc)
    ) {
      contiguous = false;
      continue;
    }
    blockHadFit = true;
    const verdict = probe(state, ec, bin, pod);
    if (verdict === 'permanent') {
      rejected[i] = 1;
      if (contiguous) ec.skip = i + 1;
      continue;
    }
    contiguous = false;
    if (verdict === 'later') continue;
    if (need !== undefined && !fits(bin.used, need, (bin.kind === 'claim' ? bin.maxAlloc : bin.cap) as Vec))
      continue;
    if (bin.kind !== 'claim') {
      if (scoring === undefined) {
        commitExisting(state, pod, ec, verdict);
        return undefined;
      }
      // kube-scheduler scores the pod alone, not with the pods that must join it.
      const score = fitScore(scoring, state, bin, ec.shape.vec);
      if (best === undefined || score > bestScore) {
        bestScore = score;
        best = verdict;
      }
      continue;
    }
    if (verdict.extraCost <= 0 && commitClaim(state, pod, ec, verdict)) return undefined;
    if (options.length < CLAIM_WINDOW) options.push(verdict);
  }
  if (best !== undefined) {
    commitExisting(state, pod, ec, best);
    return undefined;
  }
  options.sort((a, b) => a.extraCost - b.extraCost);
  const fresh = newClaims.freshClaimCost(ec);
  let i = 0;
  for (; i < options.length && (options[i] as Probe).extraCost <= fresh; i++) {
    if (commitClaim(state, pod, ec, options[i] as Probe)) return undefined;
  }
  const reasons: PoolReason[] = [];
  for (const t of state.templates) {
    const r = newClaims.tryNewClaim(pod, ec, t, need);
    if (r === undefined) return undefined;
    reasons.push({ nodePool: t.pool.name, reason: r });
  }
  for (; i < options.length; i++) {
    if (commitClaim(state, pod, ec, options[i] as Probe)) return undefined;
  }
  if (need !== undefined) return reasons;
  if (reasons.length === 0) reasons.push({ nodePool: '', reason: 'no NodePool is defined' });
  return reasons;
}

/**
 * Entering the block that starts at bin `i`: true when it can be skipped, nothing in it able to
 * take `req` for free (its existing bins cannot; a planned claim might by growing, so those are
 * skipped once the window of claims to compare is full). Scoring looks at every existing bin, so a
 * block of existing bins alone is skipped as soon as its bound says so. The previous block's bound
 * is tightened first when the scan `passedEmpty` (went through it without a fit) and could skip it.
 */
function skipBlock(
  state: SolveState,
  i: number,
  passedEmpty: boolean,
  windowFull: boolean,
  req: Vec,
  zero: Vec,
): boolean {
  const headroom = state.headroom;
  const scoring = state.existingNodeScoring !== undefined;
  const previous = (i >> BLOCK_SHIFT) - 1;
  if (passedEmpty && (windowFull || (scoring && i <= state.existingEnd)) && headroom.isDirty(previous)) {
    headroom.tighten(previous, state.bins);
  }
  const max = headroom.bound(i);
  return (
    (windowFull || (scoring && i + BLOCK_MASK < state.existingEnd)) &&
    max !== undefined &&
    !fits(zero, req, max)
  );
}

/**
 * NodeResourcesFit's score of an existing bin for a pod needing `req` (kube-scheduler's formula,
 * with its default requests for a pod without one and a node's DaemonSet pods in its allocatable).
 */
function fitScore(scoring: FitScoring, state: SolveState, bin: Bin, req: Vec): number {
  const { cpu, memory } = state.fitDims();
  const pod = scoredRequests(dimOf(req, cpu), dimOf(req, memory));
  return resourceFitScore(
    scoring,
    {
      cpu: dimOf(bin.used, cpu) + bin.scoreCpu + pod.cpu,
      memory: dimOf(bin.used, memory) + bin.scoreMemory + pod.memory,
    },
    { cpu: dimOf(bin.cap, cpu) + bin.scoreCapCpu, memory: dimOf(bin.cap, memory) + bin.scoreCapMemory },
  );
}
