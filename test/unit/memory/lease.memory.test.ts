import { makeMemoryLeaseStore } from '../../../shared/adapters/memory/index.ts';
import { describeLeaseContract } from '../../contract/lease-contract.ts';

describeLeaseContract('in-memory store', async () => makeMemoryLeaseStore());
