// Transaction type registry: the TransactionBody data case -> its handler. What is not here is
// answered NOT_SUPPORTED at precheck.
import { cryptoCreate, cryptoTransfer, cryptoUpdate } from './crypto.js';
import { topicCreate, topicSubmit } from './consensus.js';
import { scheduleCreate, scheduleDelete, scheduleSign } from './schedule.js';
import {
  tokenAssociate,
  tokenBurn,
  tokenCreate,
  tokenDissociate,
  tokenFreeze,
  tokenMint,
  tokenUnfreeze,
  tokenUpdateNfts,
  tokenWipe,
} from './token.js';
import type { Handler } from './types.js';

export const handlers: Record<string, Handler> = {
  cryptoCreateAccount: cryptoCreate,
  cryptoUpdateAccount: cryptoUpdate,
  cryptoTransfer,
  tokenCreation: tokenCreate,
  tokenAssociate,
  tokenDissociate,
  tokenMint,
  tokenBurn,
  tokenWipe,
  tokenUpdateNfts,
  tokenFreeze,
  tokenUnfreeze,
  consensusCreateTopic: topicCreate,
  consensusSubmitMessage: topicSubmit,
  scheduleCreate,
  scheduleSign,
  scheduleDelete,
};

/** Cases a schedule may wrap (a schedule cannot wrap another schedule create/sign). */
const NOT_SCHEDULABLE = new Set(['scheduleCreate', 'scheduleSign']);

/** The data case of a TransactionBody or SchedulableTransactionBody that we implement, if any. */
export function dataCase(body: Record<string, unknown>): string | undefined {
  const declared = (body as { data?: unknown }).data;
  if (typeof declared === 'string') return declared in handlers ? declared : undefined;
  return Object.keys(handlers).find((k) => body[k] !== null && body[k] !== undefined);
}

export function isSchedulableCase(c: string | undefined): boolean {
  return c !== undefined && c in handlers && !NOT_SCHEDULABLE.has(c);
}

export type { Handler };
