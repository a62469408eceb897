import { Label } from '../../core/index.ts';
import type { DisruptionCandidate, DisruptionCommand } from './method.ts';

// How a disruption message says that a price it states is one the catalog only assumes (a spot
// price without a Spot Advisor estimate, an on-demand price taken from another region): the
// words after the price, e.g. `$0.0500/h (assumed spot price)`. Events and decision reasons carry
// the words; `flotilla explain` turns them into its `*`. Pure.

/** The capacity types whose assumed prices a figure rests on, as `assumedPriceNote` names them. */
export type AssumedPrices = ReadonlySet<string>;

/** The words after a figure resting on assumed prices of these capacity types; '' for none. */
export function assumedPriceNote(capacityTypes: AssumedPrices): string {
  if (capacityTypes.size === 0) return '';
  const types = [...capacityTypes].sort((a, b) => b.localeCompare(a));
  return types.length === 1 ? ` (assumed ${types[0]} price)` : ` (assumed ${types.join(' and ')} prices)`;
}

/** The words assumedPriceNote writes, wherever they are quoted. */
const ASSUMED_PRICE_NOTE = / \(assumed [a-z-]+(?: and [a-z-]+)* prices?\)/g;

/** `text` with assumedPriceNote's words replaced by `mark` (explain's `*`), and whether it had any. */
export function markAssumedPrices(
  text: string,
  mark: string,
): { readonly text: string; readonly marked: boolean } {
  const replaced = text.replace(ASSUMED_PRICE_NOTE, mark);
  return { text: replaced, marked: replaced !== text };
}

/** The capacity types of the candidates whose price is assumed. */
export function candidatesAssumed(candidates: readonly DisruptionCandidate[]): Set<string> {
  return new Set(
    candidates.flatMap((c) =>
      c.priceAssumed === true ? [c.nodeClaim.labels[Label.capacityType] ?? 'unknown'] : [],
    ),
  );
}

/** The capacity types of the assumed prices a command's saving rests on (candidates and replacements). */
export function commandAssumed(command: DisruptionCommand): Set<string> {
  return new Set([...candidatesAssumed(command.candidates), ...(command.replacementsAssumed ?? [])]);
}
