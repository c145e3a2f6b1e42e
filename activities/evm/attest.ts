/**
 * The attest activity of the trustAttest workflow: writes a trust snapshot's hash on chain through
 * the passport contract's attestDomain(domain, snapshotHash) (contracts/AgentPassport.sol: only the
 * owner or a minter may call it; it mints an attestation token to the caller and emits
 * DomainAttested(tokenId, snapshotHash, attester, domain), which the chain indexer stores).
 *
 * Idempotent per snapshot hash, like the ledger submitter (ledger/submit.ts): the row of
 * trust_attestations records the signed transaction (raw bytes, hash, nonce) BEFORE it is sent and
 * the receipt after. A retried attempt never signs a second transaction while the recorded one may
 * still land:
 *   - confirmed row: its outcome is returned;
 *   - recorded transaction with a receipt: that receipt is the outcome;
 *   - recorded transaction without a receipt: the same bytes are sent again (the node answers
 *     "already known" or takes it) and awaited; only when the account's mined nonce has passed the
 *     recorded nonce and the transaction still has no receipt (another transaction used that
 *     nonce, so this one can never be mined) is it dropped and a new one signed;
 *   - nothing recorded: sign with the next nonce, record, send, await.
 * Signing is serialised per process (one attester key), so two attestations of one worker never
 * pick the same nonce. A revert (e.g. NotMinter: the key is not a minter) fails for good.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import {
  BaseError,
  ContractFunctionRevertedError,
  encodeFunctionData,
  getAddress,
  keccak256,
  parseEventLogs,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import type { Sql } from 'postgres';
import { agentPassportAbi } from '../../evm/abis.js';
import { trustAttestWorkflowId } from '../../workflows/contracts/trustAttest.js';
import type { EvmPublicClient, EvmWalletClient } from '../../evm/clients.js';
import {
  confirmAttestation,
  dropAttestationTx,
  failAttestation,
  findAttestation,
  onChainOf,
  recordAttestationTx,
  type AttestationRow,
  type OnChainAttestation,
} from '../../db/queries/trustAttestations.js';

export type { OnChainAttestation } from '../../db/queries/trustAttestations.js';

export interface AttestActivityDeps {
  sql: Sql;
  chainId: number;
  /** the passport contract (attestDomain) */
  contract: Address;
  publicClient: EvmPublicClient;
  /** signs as the attester (EVM_ATTESTER_KEY): a minter of the contract */
  walletClient: EvmWalletClient;
  /** how long one attempt waits for a receipt (default 60 s) */
  receiptTimeoutMs?: number;
}

export interface AttestSnapshotInput {
  domain: string;
  /** sha256 hex of the snapshot (64 hex characters, no 0x) */
  snapshotHash: string;
}

/** Errors of eth_sendRawTransaction that mean "this transaction, or its nonce, is already known". */
const ALREADY_KNOWN = /already known|known transaction|already imported|nonce too low|nonce has already been used|replacement transaction underpriced/i;

export function createAttestActivities(deps: AttestActivityDeps) {
  const { sql, publicClient, walletClient } = deps;
  const contract = getAddress(deps.contract);
  const receiptTimeoutMs = deps.receiptTimeoutMs ?? 60_000;
  let signing: Promise<unknown> = Promise.resolve();

  /** Runs `fn` after every earlier signing of this process (nonces are picked one at a time). */
  function serialised<T>(fn: () => Promise<T>): Promise<T> {
    const next = signing.then(fn, fn);
    signing = next.catch(() => undefined);
    return next;
  }

  async function receiptOf(hash: Hex): Promise<TransactionReceipt | null> {
    try {
      return await publicClient.getTransactionReceipt({ hash });
    } catch (err) {
      if (err instanceof BaseError && err.name === 'TransactionReceiptNotFoundError') return null;
      throw err;
    }
  }

  async function finish(row: AttestationRow, receipt: TransactionReceipt): Promise<OnChainAttestation> {
    if (receipt.status !== 'success') {
      await failAttestation(sql, row.snapshot_hash, `transaction ${receipt.transactionHash} reverted`);
      throw ApplicationFailure.nonRetryable(`attestDomain transaction ${receipt.transactionHash} reverted`, 'AttestReverted');
    }
    const [event] = parseEventLogs({ abi: agentPassportAbi, logs: receipt.logs, eventName: 'DomainAttested' }).filter(
      (l) => getAddress(l.address) === contract,
    );
    if (!event) throw ApplicationFailure.nonRetryable(`transaction ${receipt.transactionHash} emitted no DomainAttested`, 'AttestNoEvent');
    const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
    const done = await confirmAttestation(sql, row.snapshot_hash, {
      txHash: receipt.transactionHash,
      tokenId: event.args.tokenId,
      blockNumber: receipt.blockNumber,
      attestedAt: new Date(Number(block.timestamp) * 1000),
    });
    return onChainOf(done);
  }

  /** Sends recorded bytes (again); "already known" and "nonce too low" are not errors here. */
  async function send(raw: Hex): Promise<void> {
    try {
      await publicClient.sendRawTransaction({ serializedTransaction: raw });
    } catch (err) {
      const text = err instanceof BaseError ? `${err.shortMessage} ${err.details ?? ''}` : String(err);
      if (!ALREADY_KNOWN.test(text)) throw err;
    }
  }

  async function awaitReceipt(row: AttestationRow, hash: Hex): Promise<OnChainAttestation> {
    const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: receiptTimeoutMs });
    return finish(row, receipt);
  }

  /** Signs attestDomain with the next nonce and records it; returns the row with the recorded transaction. */
  async function signAndRecord(row: AttestationRow, input: AttestSnapshotInput): Promise<AttestationRow> {
    return serialised(async () => {
      const data = encodeFunctionData({ abi: agentPassportAbi, functionName: 'attestDomain', args: [input.domain, `0x${input.snapshotHash}`] });
      // a call first: a revert (not a minter, empty domain) fails for good before anything is signed
      try {
        await publicClient.call({ account: walletClient.account, to: contract, data });
      } catch (err) {
        const revert = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : null;
        const reason = err instanceof BaseError ? err.shortMessage : String(err);
        if (revert || /revert/i.test(reason)) {
          await failAttestation(sql, row.snapshot_hash, `attestDomain reverts: ${reason}`);
          throw ApplicationFailure.nonRetryable(`attestDomain reverts: ${reason}`, 'AttestReverted');
        }
        throw err;
      }
      const nonce = await publicClient.getTransactionCount({ address: walletClient.account.address, blockTag: 'pending' });
      const request = await walletClient.prepareTransactionRequest({ to: contract, data, nonce, chain: walletClient.chain, account: walletClient.account });
      const raw = await walletClient.signTransaction(request as never);
      const hash = keccak256(raw);
      await recordAttestationTx(sql, row.snapshot_hash, { hash, raw, nonce });
      // whoever recorded first, the row now names the one transaction of this snapshot
      const recorded = (await findAttestation(sql, row.snapshot_hash))!;
      if (recorded.raw_tx) await send(recorded.raw_tx as Hex);
      return recorded;
    });
  }

  /** Writes the snapshot hash on chain once; returns the SPEC on_chain object. */
  async function attestSnapshot(input: AttestSnapshotInput): Promise<OnChainAttestation> {
    if (!/^[0-9a-f]{64}$/.test(input.snapshotHash)) throw ApplicationFailure.nonRetryable('snapshotHash must be 64 lower-case hex characters', 'AttestBadInput');
    let row = await findAttestation(sql, input.snapshotHash);
    if (!row) throw ApplicationFailure.nonRetryable(`no attestation record for ${input.snapshotHash}`, 'AttestNotOpened');
    // the key signs only the record the API opened, for the workflow of that record (issue 26 item 2;
    // tests put a scope in front of the id): a copied input under another id or domain signs nothing
    const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
    if (row.domain !== input.domain || !workflowId.endsWith(trustAttestWorkflowId(row.domain, row.snapshot_hash))) {
      throw ApplicationFailure.nonRetryable(`attestation ${input.snapshotHash} is not this workflow's (${workflowId})`, 'NotOwnClaim');
    }
    if (row.status === 'confirmed') return onChainOf(row);
    if (row.status === 'failed') throw ApplicationFailure.nonRetryable(`attestation failed: ${row.error ?? 'unknown'}`, 'AttestReverted');

    if (row.raw_tx && row.tx_hash) {
      const hash = row.tx_hash as Hex;
      const receipt = await receiptOf(hash);
      if (receipt) return finish(row, receipt);
      const mined = await publicClient.getTransactionCount({ address: walletClient.account.address, blockTag: 'latest' });
      if (row.nonce !== null && mined > Number(row.nonce)) {
        // the nonce is used and this transaction has no receipt: it can never be mined
        await dropAttestationTx(sql, row.snapshot_hash, hash);
        row = (await findAttestation(sql, input.snapshotHash))!;
      } else {
        await send(row.raw_tx as Hex);
        return awaitReceipt(row, hash);
      }
    }
    row = await signAndRecord(row, input);
    return awaitReceipt(row, row.tx_hash as Hex);
  }

  return { attestSnapshot };
}

export type AttestActivities = ReturnType<typeof createAttestActivities>;
