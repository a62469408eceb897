import type { AlarmReader, AlarmState } from '../../ports/alarms.ts';

// CloudWatch's alarms in memory, for the simulator: alarms are set by name; one never set does
// not exist.

export interface MemoryAlarms extends AlarmReader {
  set(name: string, state: AlarmState): void;
}

export function makeMemoryAlarms(): MemoryAlarms {
  const alarms = new Map<string, AlarmState>();
  return {
    set(name, state) {
      alarms.set(name, state);
    },
    async states(names) {
      const found = new Map<string, AlarmState>();
      for (const name of names) {
        const state = alarms.get(name);
        if (state !== undefined) found.set(name, state);
      }
      return found;
    },
  };
}
