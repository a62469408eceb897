// The DynamoDB state table's key schema, shared by the stack that creates the table and the
// adapters that read and write it (offering cache, ICE back-offs, leases).

/** Key and TTL attribute names of the state table; items expire through `expiresAt`. */
export const STATE_TABLE = { partitionKey: 'pk', sortKey: 'sk', ttlAttribute: 'expiresAt' } as const;
