// How long a disruption pass spent in each of its phases, by the pass's clock, for its line: where
// a pass on a large cluster spends its time (reads, commands, the reports, the condition writes).

import type { DisruptionPassPhase as PassPhase } from '../decisions/disruption.ts';

export class PassPhases {
  private readonly ms: Partial<Record<PassPhase, number>> = {};
  private mark: number;

  constructor(private readonly now: () => number) {
    this.mark = now();
  }

  /** Ends `phase`: the time since the previous phase ended (or the pass began) is counted to it. */
  end(phase: PassPhase): void {
    const at = this.now();
    this.ms[phase] = (this.ms[phase] ?? 0) + (at - this.mark);
    this.mark = at;
  }

  /** The phases ended so far, in ms. */
  values(): Readonly<Partial<Record<PassPhase, number>>> {
    return { ...this.ms };
  }
}
