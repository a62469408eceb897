/** A CloudWatch alarm's state, as DescribeAlarms reports it (metric and composite alarms alike). */
export type AlarmState = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';

/**
 * Reads CloudWatch alarms by name. An alarm the answer leaves out does not exist (or is not the
 * caller's to see): it is absent from the map, never reported as OK.
 */
export interface AlarmReader {
  /** @throws CloudApiError when CloudWatch cannot be read. */
  states(names: readonly string[]): Promise<ReadonlyMap<string, AlarmState>>;
}
