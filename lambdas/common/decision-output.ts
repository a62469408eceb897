import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { awsClientConfig } from '../../shared/adapters/aws/clients.ts';
import { makeDecisionBus } from '../../shared/adapters/aws/decision-bus.ts';
import type { DecisionEventBus } from '../../shared/ports/decision-events.ts';
import { type Logger, makeLogger } from '../../shared/runtime/logger.ts';
import { metricsClusterOf } from '../../shared/runtime/metrics.ts';
import { makeEmfMetrics } from '../../shared/runtime/metrics-sink.ts';
import { decisionEvents } from '../../shared/usecases/decisions/events.ts';
import type { MetricsSink } from '../../shared/usecases/decisions/sink.ts';

// Where a Lambda's decisions go: its JSON log lines, their metrics as EMF beside them, and, with
// the stack's event bus, each decision as an event there (flushed at the end of every invocation).

export interface DecisionOutputSettings {
  readonly lambda: string;
  readonly clusterName: string;
  readonly region: string;
  readonly shadow: boolean;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** The stack's decision bus, when it has one. */
  readonly busName: string | undefined;
}

export function makeDecisionOutput(settings: DecisionOutputSettings): {
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  readonly bus: DecisionEventBus | undefined;
} {
  const { lambda, clusterName, region, shadow, busName } = settings;
  // A shadow stack's lines say so, and its metrics go to a series of their own.
  const fields = { lambda, cluster: clusterName, ...(shadow ? { shadow: true } : {}) };
  const logger = makeLogger(fields, { level: settings.logLevel });
  const emf = makeEmfMetrics({ cluster: metricsClusterOf(clusterName, shadow), fields });
  const bus =
    busName === undefined
      ? undefined
      : makeDecisionBus({
          eventBridge: new EventBridgeClient(awsClientConfig({ region, logger })),
          busName,
          logger,
        });
  const metrics: MetricsSink = bus === undefined ? emf : { ...emf, observe: decisionEvents(bus) };
  return { logger, metrics, bus };
}
