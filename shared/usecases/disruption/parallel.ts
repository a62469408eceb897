// A few calls of a disruption pass at once: reads of a confirmation, notes of why nodes stay.

/**
 * Runs `run` on each item, `parallelism` at once; after a failure none more starts, and once those
 * started are done the first failure is thrown.
 */
export async function atMostParallel<T>(
  parallelism: number,
  items: readonly T[],
  run: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const worker = async () => {
    while (failures.length === 0 && next < items.length) {
      const index = next++;
      try {
        await run(items[index] as T, index);
      } catch (error) {
        failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallelism, items.length) }, worker));
  if (failures.length > 0) throw failures[0];
}
