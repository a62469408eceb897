export * from './clock.ts';
export * from './cloud.ts';
export * from './cluster.ts';
export * from './errors.ts';
export * from './lease.ts';
export * from './state.ts';
export * from './work-queue.ts';
