import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type NodeDeletion, nodeDeletionVersion } from '../../messages/node-deletion.ts';
import type { Clock } from '../../ports/clock.ts';
import { toCloudApiError } from './errors.ts';

/** A NodeClaim whose deletion a controller began. */
export interface DeletedNodeClaim {
  readonly name: string;
  readonly uid: string;
}

/**
 * Tells the provisioner, through its own queue and without delay, that a controller began
 * deleting a NodeClaim (the interruption controller's), as the shim tells it of every deletion it
 * sees: the provisioner then plans for the node's pods while they drain.
 * @throws CloudApiError when SQS refuses the message.
 */
export function makeNodeDeletionSender(options: {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly clusterName: string;
  readonly clock: Clock;
}) {
  return async (claim: DeletedNodeClaim): Promise<void> => {
    const body: NodeDeletion = {
      version: nodeDeletionVersion,
      kind: 'NodeDeleting',
      cluster: options.clusterName,
      object: 'NodeClaim',
      name: claim.name,
      uid: claim.uid,
      observedAt: options.clock.now().toISOString(),
    };
    try {
      await options.sqs.send(
        new SendMessageCommand({ QueueUrl: options.queueUrl, MessageBody: JSON.stringify(body) }),
      );
    } catch (error) {
      throw toCloudApiError('SendMessage (node deletion)', error);
    }
  };
}
