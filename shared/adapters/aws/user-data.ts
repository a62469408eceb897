// User data is rendered the same way by the EC2 adapter and the simulator's twin.
export * from '../user-data.ts';
