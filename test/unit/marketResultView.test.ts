// Who reads a delivered result (issue 26 item 3): the task as answered (api/market/views.ts
// taskResponse) through the compiled serialiser of the Task schema, as GET /market/tasks and GET
// /market/tasks/{taskId} send it; and the marketplace topic message, which is public.
import { describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { publicTaskMessage, resultVisibleTo, type TaskMessage, type TaskRecord } from '../../domain/market.js';
import { publicTaskResponse, taskResponse } from '../../api/market/views.js';
import { serializerFor } from '../../api/serializer.js';
import { taskListSchema, taskSchema } from '../../api/schemas/market.js';

const poster = 'did:hedera:local:0.0.1001';
const claimer = 'did:hedera:local:0.0.1002';
const stranger = 'did:hedera:local:0.0.1003';
const SECRET = 'the delivered work, not paid for yet';
const IPFS = 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi';

function delivered(over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: uuidv7(), title: 'Summarise', description: '', priceHbar: 2, priceTinybars: '200000000', capabilities: [], status: 'delivered',
    posterDid: poster, claimerDid: claimer, scheduleId: '0.0.5005', topUpScheduleId: null, escrowStatus: 'funded', escrowedTinybars: '200000000',
    verificationAttempts: 0, verifierType: 'none', verifierConfig: null, deadline: null, resultBody: SECRET, resultIpfs: IPFS,
    resultSha256: 'ab'.repeat(32), paymentTxId: null, refundTxId: null, feeBps: 250, escrow: true, createdAt: '', updatedAt: '', ...over,
  };
}

const serializeTask = serializerFor(taskSchema);
const serializeList = serializerFor(taskListSchema);
const answered = (t: TaskRecord, viewer?: string) => JSON.parse(serializeTask(taskResponse(t, viewer))) as Record<string, unknown>;

describe('a delivered result is the parties\' until the task is completed', () => {
  it('anonymous and third-party reads of a delivered task carry resultSha256 and the status, not resultBody or resultIpfs', () => {
    const t = delivered();
    for (const viewer of [undefined, stranger]) {
      const body = answered(t, viewer);
      expect(body).toMatchObject({ status: 'delivered', resultSha256: t.resultSha256 });
      expect(body).not.toHaveProperty('resultBody');
      expect(body).not.toHaveProperty('resultIpfs');
      expect(JSON.stringify(body)).not.toContain(SECRET);
    }
    const list = serializeList({ tasks: [t].map(publicTaskResponse), count: 1, total: 1, limit: 20, offset: 0 });
    expect(list).not.toContain(SECRET);
    expect(list).not.toContain(IPFS);
  });

  it('the poster and the claimer read the result', () => {
    const t = delivered();
    for (const viewer of [poster, claimer]) expect(answered(t, viewer)).toMatchObject({ resultBody: SECRET, resultIpfs: IPFS });
  });

  it('once completed (paid) the result is public; a cancelled task keeps it with the parties', () => {
    const paid = delivered({ status: 'completed', escrowStatus: 'released', paymentTxId: '0.0.2@1.2' });
    expect(answered(paid)).toMatchObject({ resultBody: SECRET, resultIpfs: IPFS });
    const cancelled = delivered({ status: 'cancelled', escrowStatus: 'refunded' });
    expect(answered(cancelled)).not.toHaveProperty('resultBody');
    expect(answered(cancelled, claimer)).toMatchObject({ resultBody: SECRET });
    expect(resultVisibleTo(cancelled, poster)).toBe(true);
    expect(resultVisibleTo(cancelled, undefined)).toBe(false);
  });

  it('the anonymous view of a record is made once (the memory reads cost no copy per request)', () => {
    const t = delivered();
    expect(publicTaskResponse(t)).toBe(publicTaskResponse(t));
    expect(taskResponse(t, poster)).not.toBe(publicTaskResponse(t));
  });

  it('the public marketplace topic message never carries the result reference', () => {
    const m: TaskMessage = { v: 1, type: 'task.delivered', taskId: uuidv7(), seq: 3, status: 'delivered', escrowStatus: 'funded', at: '', claimerDid: claimer, resultSha256: 'ab'.repeat(32), resultIpfs: IPFS };
    const published = JSON.stringify(publicTaskMessage(m));
    expect(published).not.toContain(IPFS);
    expect(JSON.parse(published)).toMatchObject({ type: 'task.delivered', resultSha256: m.resultSha256, claimerDid: claimer });
  });
});
