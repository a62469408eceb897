import { DeleteEventBusCommand, EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { beforeEach, describe, expect, it } from 'vitest';
import { DECISION_EVENT_SOURCE, makeDecisionBus } from '../../../shared/adapters/aws/decision-bus.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { dropMetrics } from '../../../shared/runtime/metrics-sink.ts';
import { type Decision, writeDecisions } from '../../../shared/usecases/decisions/decision.ts';
import { decisionEvents } from '../../../shared/usecases/decisions/events.ts';
import { decisionRule } from '../../harness/aws/decision-rules.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_NAMES } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { CORPUS } from '../../unit/usecases/decision-corpus.ts';

// Every decision also as an event on the stack's bus, on moto's EventBridge: decisions written by
// a use case reach the bus with the disruption Lambda's role (the IAM check holds each PutEvents to
// its policy from the synthesized stack), and a rule as a team would write one (source `flotilla`,
// one detail type) routes only that kind to its queue, the detail being the decision's log line.

let server: Moto;
let admin: EventBridgeClient;

beforeEach(async () => {
  server = await moto();
  await resetMoto(server);
  await deployStack(server);
  admin = new EventBridgeClient(awsClientConfig(server));
});

/** The bus as the disruption Lambda's wiring builds it, with its logger's lines kept. */
function disruptionBus() {
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger(
    { lambda: 'disruption', cluster: 'test-cluster' },
    { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const bus = makeDecisionBus({
    eventBridge: new EventBridgeClient(awsConfigAs(server, 'disruption')),
    busName: STACK_NAMES.decisionBus,
    logger,
  });
  const out = { logger, metrics: { ...dropMetrics(), observe: decisionEvents(bus) } };
  return { bus, out, lines };
}

const launch = CORPUS.launch[0]?.decision as Decision;

const blocked = (i: number): Decision => ({
  kind: 'unschedulable',
  reason: 'no NodePool matches',
  pods: [{ namespace: 'apps', name: `batch-${i}` }],
});

describe("the stack's decision bus", () => {
  it('carries every decision, and a rule on one detail type routes only that kind', async () => {
    const launches = await decisionRule(server, 'launches', {
      source: [DECISION_EVENT_SOURCE],
      'detail-type': ['launch'],
    });
    const everything = await decisionRule(server, 'everything', { source: [DECISION_EVENT_SOURCE] });
    const { bus, out, lines } = disruptionBus();
    // More than one PutEvents call's worth: ten entries a call.
    writeDecisions(out, [launch, ...Array.from({ length: 14 }, (_, i) => blocked(i))]);
    await bus.flush();

    expect(lines.filter((l) => l['level'] === 'error')).toEqual([]);
    const all = await everything.read();
    expect(all).toHaveLength(15);
    expect(all.filter((e) => e['detail-type'] === 'unschedulable')).toHaveLength(14);
    const routed = await launches.read();
    expect(routed).toHaveLength(1);
    expect(routed[0]).toMatchObject({ source: 'flotilla', 'detail-type': 'launch' });
    // The detail is the decision's log line as the logger wrote it, less its timestamp.
    const { time: _, ...line } = lines.find((l) => l['decision'] === 'launch') ?? {};
    expect(line).toMatchObject({ lambda: 'disruption', nodeClaim: 'default-abc12', podCount: 3 });
    expect(routed[0]?.['detail']).toEqual(line);
  });

  it('reports events it could not deliver in one error line, and the decisions stay written', async () => {
    await admin.send(new DeleteEventBusCommand({ Name: STACK_NAMES.decisionBus }));
    const { bus, out, lines } = disruptionBus();
    writeDecisions(out, [launch, blocked(0), blocked(1)]);
    await expect(bus.flush()).resolves.toBeUndefined();
    expect(lines.filter((l) => l['decision'] !== undefined)).toHaveLength(3);
    const errors = lines.filter((l) => l['level'] === 'error');
    expect(errors).toEqual([
      expect.objectContaining({
        message: 'decision events not delivered',
        bus: STACK_NAMES.decisionBus,
        events: 3,
        decisions: ['launch', 'unschedulable'],
        error: expect.any(String),
      }),
    ]);
    // A flush with nothing added sends nothing and reports nothing.
    await bus.flush();
    expect(lines.filter((l) => l['level'] === 'error')).toHaveLength(1);
  });
});
