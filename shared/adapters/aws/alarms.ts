import { type CloudWatchClient, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import type { AlarmReader, AlarmState } from '../../ports/alarms.ts';
import { call } from './errors.ts';

// CloudWatch's alarms as the AlarmReader: DescribeAlarms by name, metric and composite alarms
// alike, following NextToken. An alarm CloudWatch does not return is left out of the answer.

/** DescribeAlarms takes at most this many names a call. */
const MAX_NAMES = 100;

const STATES: ReadonlySet<string> = new Set(['OK', 'ALARM', 'INSUFFICIENT_DATA']);

export function makeAlarmReader(cloudWatch: Pick<CloudWatchClient, 'send'>): AlarmReader {
  return {
    async states(names) {
      const states = new Map<string, AlarmState>();
      for (let i = 0; i < names.length; i += MAX_NAMES) {
        const batch = names.slice(i, i + MAX_NAMES);
        let nextToken: string | undefined;
        do {
          const token = nextToken;
          const out = await call('cloudwatch:DescribeAlarms', () =>
            cloudWatch.send(
              new DescribeAlarmsCommand({
                AlarmNames: batch,
                AlarmTypes: ['MetricAlarm', 'CompositeAlarm'],
                MaxRecords: MAX_NAMES,
                ...(token === undefined ? {} : { NextToken: token }),
              }),
            ),
          );
          for (const alarm of [...(out.MetricAlarms ?? []), ...(out.CompositeAlarms ?? [])]) {
            const state = alarm.StateValue;
            if (alarm.AlarmName !== undefined && state !== undefined && STATES.has(state)) {
              states.set(alarm.AlarmName, state as AlarmState);
            }
          }
          nextToken = out.NextToken;
        } while (nextToken !== undefined);
      }
      return states;
    },
  };
}
