export * from './clock.ts';
export * from './cloud.ts';
export * from './state.ts';
