/**
 * On-chain attestations of trust snapshots (migration 0011, trust_attestations): one row per
 * snapshot hash, the idempotency record of POST /api/trust/{domain}/attest and of the attest
 * activity (signed transaction recorded before it is sent, receipt after).
 */
import type { Sql } from 'postgres';
import { appendEvents } from './events.js';

export type AttestationStatus = 'pending' | 'sending' | 'confirmed' | 'failed';

export interface AttestationRow {
  snapshot_hash: string;
  domain: string;
  attested_by: string;
  chain_id: string;
  contract_address: string;
  status: AttestationStatus;
  tx_hash: string | null;
  raw_tx: string | null;
  nonce: string | null;
  token_id: string | null;
  block_number: string | null;
  attested_at: Date | null;
  error: string | null;
  snapshot: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

/** SPEC 2, trust snapshot `on_chain`. */
export interface OnChainAttestation {
  chain: 'eip155';
  chain_id: number;
  contract_address: string;
  token_id: number;
  attested_at: string;
  attested_by: string;
  tx_hash: string;
  revoked: boolean;
}

export async function findAttestation(sql: Sql, snapshotHash: string): Promise<AttestationRow | null> {
  const rows = await sql<AttestationRow[]>`select * from trust_attestations where snapshot_hash = ${snapshotHash}`;
  return rows[0] ?? null;
}

/**
 * Records the intent to attest a snapshot (first caller wins: an existing row, whoever made it, is
 * returned unchanged, so a snapshot hash is attested once). A failed row (its transaction reverted,
 * which is final, or it was refused before sending) is reopened for a new attempt.
 */
export async function openAttestation(
  sql: Sql,
  a: { snapshotHash: string; domain: string; attestedBy: string; chainId: number; contractAddress: string; snapshot: Record<string, unknown> },
): Promise<AttestationRow> {
  return (await openAttestationOnce(sql, a)).row;
}

/** openAttestation, also saying whether this call opened the row (inserted it or reopened a failed one): only then is a transaction owed. */
export async function openAttestationOnce(
  sql: Sql,
  a: { snapshotHash: string; domain: string; attestedBy: string; chainId: number; contractAddress: string; snapshot: Record<string, unknown> },
): Promise<{ row: AttestationRow; opened: boolean }> {
  const opened = await sql`
    insert into trust_attestations (snapshot_hash, domain, attested_by, chain_id, contract_address, snapshot)
    values (${a.snapshotHash}, ${a.domain}, ${a.attestedBy}, ${a.chainId}, ${a.contractAddress}, ${sql.json(a.snapshot as never)})
    on conflict (snapshot_hash) do update set status = 'pending', error = null, attested_by = excluded.attested_by,
      tx_hash = null, raw_tx = null, nonce = null, updated_at = now()
      where trust_attestations.status = 'failed'
    returning 1`;
  return { row: (await findAttestation(sql, a.snapshotHash))!, opened: opened.length === 1 };
}

/**
 * Records the signed transaction before it is sent. Only the first signer of a row records (raw_tx
 * still null); returns false when another attempt recorded one first (use that one).
 */
export async function recordAttestationTx(sql: Sql, snapshotHash: string, tx: { hash: string; raw: string; nonce: number }): Promise<boolean> {
  const rows = await sql`
    update trust_attestations set status = 'sending', tx_hash = ${tx.hash}, raw_tx = ${tx.raw}, nonce = ${tx.nonce}, updated_at = now()
    where snapshot_hash = ${snapshotHash} and raw_tx is null and status in ('pending', 'sending')
    returning 1`;
  return rows.length === 1;
}

/**
 * Forgets a recorded transaction that provably never reached the chain (its nonce was used by
 * another transaction of the same account and no receipt exists), so a new one can be signed.
 */
export async function dropAttestationTx(sql: Sql, snapshotHash: string, txHash: string): Promise<void> {
  await sql`
    update trust_attestations set raw_tx = null, tx_hash = null, nonce = null, status = 'pending', updated_at = now()
    where snapshot_hash = ${snapshotHash} and tx_hash = ${txHash} and status = 'sending'`;
}

export async function confirmAttestation(
  sql: Sql,
  snapshotHash: string,
  c: { txHash: string; tokenId: bigint; blockNumber: bigint; attestedAt: Date },
): Promise<AttestationRow> {
  return sql.begin(async (tx) => {
    const [row] = await tx<AttestationRow[]>`
      update trust_attestations set status = 'confirmed', tx_hash = ${c.txHash}, token_id = ${c.tokenId.toString()},
        block_number = ${c.blockNumber.toString()}, attested_at = ${c.attestedAt}, error = null, updated_at = now()
      where snapshot_hash = ${snapshotHash}
      returning *`;
    // the attester's event, once per snapshot hash, last in the transaction
    await appendEvents(tx, [
      {
        type: 'trust.attested',
        subject: row!.domain,
        audience: [row!.attested_by],
        data: { domain: row!.domain, snapshotHash, attestedBy: row!.attested_by, chainId: Number(row!.chain_id), txHash: c.txHash, tokenId: Number(c.tokenId), blockNumber: Number(c.blockNumber) },
        key: `trust.attested:${snapshotHash}`,
      },
    ]);
    return row!;
  }) as Promise<AttestationRow>;
}

export async function failAttestation(sql: Sql, snapshotHash: string, error: string): Promise<void> {
  await sql`update trust_attestations set status = 'failed', error = ${error.slice(0, 500)}, updated_at = now() where snapshot_hash = ${snapshotHash}`;
}

/** The SPEC on_chain object of a confirmed attestation. */
export function onChainOf(row: AttestationRow): OnChainAttestation {
  if (row.status !== 'confirmed' || !row.tx_hash || row.token_id === null || !row.attested_at) throw new Error(`attestation ${row.snapshot_hash} is not confirmed`);
  return {
    chain: 'eip155',
    chain_id: Number(row.chain_id),
    contract_address: row.contract_address,
    token_id: Number(row.token_id),
    attested_at: row.attested_at.toISOString(),
    attested_by: row.attested_by,
    tx_hash: row.tx_hash,
    revoked: false,
  };
}
