import { BINARY_UNITS, findCondition, isConditionTrue, NodeClaimConditionType } from '../../core/index.ts';
import type { Cluster, ClusterNodeClaim, ConditionUpdate, NodeInfo } from '../../ports/cluster.ts';
import { isNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import { nodesByProviderId } from '../state/node-index.ts';

// Karpenter's NodeClaim consistency check, on the garbage collector's pass over the NodeClaims and
// Nodes it reads anyway: a NodeClaim whose Node has come up with less of a resource than the
// NodeClaim expected (under 90% of its `status.capacity`, for a resource its requests name) is
// reported, with a Warning Event `FailedConsistencyCheck` per issue and its `ConsistentStateFound`
// condition False; one that shows none has the condition True. It only reports: nothing is
// deleted, tainted or disrupted for it.

/**
 * How often Karpenter checks one NodeClaim (its consistency controller's scan period): the window
 * of a FailedConsistencyCheck Event, so one that persists is recorded again at that pace.
 */
export const CONSISTENCY_SCAN_SECONDS = 10 * 60;

/** Below this share of what the NodeClaim expected of a resource, its Node is inconsistent. */
const MIN_EXPECTED_SHARE = 0.9;

/** The reason and message of `ConsistentStateFound=False`, Karpenter's. */
const FAILED = { reason: 'ConsistencyCheckFailed', message: 'Consistency Check Failed' } as const;

/** What the check found of one NodeClaim that asks for a write or an Event. */
export interface ConsistencyFinding {
  readonly claim: ClusterNodeClaim;
  readonly node: NodeInfo;
  /** Each way the Node contradicts the NodeClaim (the messages of its Events). */
  readonly issues: readonly string[];
  /** The `ConsistentStateFound` condition to write, when it changes. */
  readonly update?: ConditionUpdate;
}

/**
 * Where the Node falls short of a resource the NodeClaim asked for and expected: its capacity under
 * 90% of the NodeClaim's `status.capacity`. None while the NodeClaim is being deleted or has not
 * initialized. Resources in name order. Pure.
 */
export function nodeShapeIssues(claim: ClusterNodeClaim, node: NodeInfo): string[] {
  if (claim.deleting) return [];
  if (!isConditionTrue(claim.status.conditions, NodeClaimConditionType.initialized)) return [];
  const expectedAll = claim.status.capacity ?? {};
  const found = node.capacity ?? {};
  const issues: string[] = [];
  for (const name of Object.keys(claim.requests).sort()) {
    const expected = expectedAll[name] ?? 0;
    if ((claim.requests[name] ?? 0) === 0 || expected === 0) continue;
    const actual = found[name] ?? 0;
    const share = actual / expected;
    if (share < MIN_EXPECTED_SHARE) {
      issues.push(
        `expected ${quantity(name, expected)} of resource ${name}, but found ${quantity(name, actual)} (${(share * 100).toFixed(1)}% of expected)`,
      );
    }
  }
  return issues;
}

/**
 * An amount as Kubernetes writes the quantity (Karpenter's messages print it so): cpu in cores, or
 * millicores when not whole; a byte amount with the largest binary suffix that divides it; others
 * as they are.
 */
function quantity(resource: string, amount: number): string {
  if (resource === 'cpu') return amount % 1000 === 0 ? String(amount / 1000) : `${amount}m`;
  if (resource === 'memory' || resource.endsWith('storage') || resource.startsWith('hugepages-')) {
    const unit = BINARY_UNITS.find(([, size]) => amount !== 0 && amount % size === 0);
    if (unit !== undefined) return `${amount / unit[1]}${unit[0]}`;
  }
  return String(amount);
}

/**
 * The check over one reading: each NodeClaim with a providerID whose Node (the one Node of that
 * providerID; none or several, and it is left alone) shows issues, or whose condition changes.
 * Pure.
 */
export function decideConsistency(
  claims: readonly ClusterNodeClaim[],
  nodes: readonly NodeInfo[],
): ConsistencyFinding[] {
  const byProvider = nodesByProviderId(nodes);
  const findings: ConsistencyFinding[] = [];
  for (const claim of claims) {
    const providerId = claim.status.providerId;
    const matching = providerId === undefined ? undefined : byProvider.get(providerId);
    const node = matching?.length === 1 ? matching[0] : undefined;
    if (node === undefined) continue;
    const issues = nodeShapeIssues(claim, node);
    const update = conditionChange(claim, issues.length > 0);
    if (issues.length > 0 || update !== undefined) {
      findings.push({ claim, node, issues, ...(update === undefined ? {} : { update }) });
    }
  }
  return findings;
}

/** `ConsistentStateFound` as the check leaves it, when that differs from what the NodeClaim has. */
function conditionChange(claim: ClusterNodeClaim, inconsistent: boolean): ConditionUpdate | undefined {
  const type = NodeClaimConditionType.consistentStateFound;
  const current = findCondition(claim.status.conditions, type);
  if (inconsistent) {
    const same =
      current?.status === 'False' && current.reason === FAILED.reason && current.message === FAILED.message;
    return same ? undefined : { type, status: 'False', ...FAILED };
  }
  return current?.status === 'True' ? undefined : { type, status: 'True', reason: type, message: '' };
}

/** What reportConsistency works with. */
export interface ConsistencyPorts {
  readonly cluster: Pick<Cluster, 'patchNodeClaimStatus' | 'recordEvent'>;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
}

/** Status writes and Events under way at once. */
const CONCURRENCY = 4;

/**
 * No finding is started with less than this left before the pass's deadline: its write may take a
 * conflicting patch, a read and the patch, each bounded by the adapter's 10 s call timeout, and
 * node repair runs after the pass in the same invocation. Those left out are found and written by
 * the next pass (a first pass over thousands of NodeClaims that lack the condition, say, is spread
 * over a few).
 */
export const CONSISTENCY_WRITE_MARGIN_MS = 30_000;

/** When the pass must be done by, for reportConsistency. */
export interface ConsistencyDeadline {
  /** Epoch ms by which the pass must be done, when it has a deadline. */
  readonly deadlineMs: () => number | undefined;
  readonly nowMs: () => number;
}

/**
 * Applies the findings: the condition written where it changes (against the NodeClaim as read; a
 * NodeClaim gone meanwhile is skipped), a FailedConsistencyCheck Event per issue (keyed by the
 * NodeClaim's uid and the issue, once per scan period), and a decision line each time the condition
 * turns False, or True again after False. Returns the NodeClaims found inconsistent and the
 * findings that failed (the others go on).
 */
export async function reportConsistency(
  ports: ConsistencyPorts,
  findings: readonly ConsistencyFinding[],
  deadline?: ConsistencyDeadline,
): Promise<{
  readonly inconsistent: readonly string[];
  readonly failed: readonly { readonly step: string; readonly error: unknown }[];
}> {
  const queue = [...findings];
  const failed: { step: string; error: unknown }[] = [];
  const timeLeft = () => {
    const by = deadline?.deadlineMs();
    return by === undefined || deadline === undefined
      ? true
      : by - deadline.nowMs() >= CONSISTENCY_WRITE_MARGIN_MS;
  };
  const worker = async () => {
    for (
      let f = timeLeft() ? queue.shift() : undefined;
      f !== undefined;
      f = timeLeft() ? queue.shift() : undefined
    ) {
      try {
        await report(ports, f);
      } catch (error) {
        ports.logger.error('consistency check step failed', { nodeClaim: f.claim.name, error });
        failed.push({ step: `consistency ${f.claim.name}`, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
  if (queue.length > 0) {
    ports.logger.warn('consistency check left for the next pass', {
      why: `less than ${CONSISTENCY_WRITE_MARGIN_MS / 1000} s left before the pass's deadline`,
      nodeClaims: queue.length,
      of: findings.length,
    });
  }
  return {
    inconsistent: findings.filter((f) => f.issues.length > 0).map((f) => f.claim.name),
    failed,
  };
}

async function report(ports: ConsistencyPorts, finding: ConsistencyFinding): Promise<void> {
  const { cluster } = ports;
  const { claim, node, issues, update } = finding;
  if (update !== undefined) {
    try {
      await cluster.patchNodeClaimStatus(claim.name, { conditions: [update] }, claim);
    } catch (error) {
      // Gone since the reading: nothing left to report on.
      if (isNotFound(error)) return;
      throw error;
    }
  }
  for (const issue of issues) {
    await cluster.recordEvent({
      subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid },
      type: 'Warning',
      reason: 'FailedConsistencyCheck',
      message: issue,
      dedupeValues: [claim.uid, issue],
      dedupeSeconds: CONSISTENCY_SCAN_SECONDS,
    });
  }
  const wasFalse =
    findCondition(claim.status.conditions, NodeClaimConditionType.consistentStateFound)?.status === 'False';
  if (update?.status === 'False' || (update?.status === 'True' && wasFalse)) {
    writeDecision(ports, {
      kind: 'consistency',
      reason: update.status === 'False' ? FAILED.reason : NodeClaimConditionType.consistentStateFound,
      ...nodeClaimFields(claim),
      node: node.name,
      ...(issues.length > 0 ? { issues } : {}),
    });
  }
}
