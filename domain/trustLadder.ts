/** The trust tier ladder of SPEC section 2 (GET /api/meta/trust-tiers): seven entries, levels 0-5. */
export interface TrustTier {
  name: string;
  level: number;
  description: string;
  unlocks: string[];
  requirements: string[];
}

export const TRUST_LADDER: readonly TrustTier[] = [
  {
    name: 'unverified',
    level: 0,
    description: 'Anyone, without credentials.',
    unlocks: ['free read endpoints'],
    requirements: ['none; free read endpoints only'],
  },
  {
    name: 'observer',
    level: 0,
    description: 'Holder of a free registry api key.',
    unlocks: ['keyed free tier'],
    requirements: [
      'register through POST /api/v1/agents/register with a name (per-IP daily cap applies)',
      'the issued api key is displayed once and only its sha256 hash is kept',
    ],
  },
  {
    name: 'did_verified',
    level: 1,
    description: 'Proves control of a ledger account through its DID.',
    unlocks: ['signed requests'],
    requirements: [
      'a valid DID of form did:<ledger>:<network>:<accountId>',
      'ability to sign challenges with the account key',
    ],
  },
  {
    name: 'passport_holder',
    level: 2,
    description: 'Owns a passport NFT.',
    unlocks: ['directory registration', 'agent-to-agent messaging'],
    requirements: ['owns a passport of any tier, minted on the ledger'],
  },
  {
    name: 'passport_verified',
    level: 3,
    description: 'Passport checked and active.',
    unlocks: ['verified (gold and above)'],
    requirements: [
      'passport exists',
      'passport is not revoked',
      'verified through GET /passport/{tokenId}/{serial}',
    ],
  },
  {
    name: 'marketplace_participant',
    level: 4,
    description: 'Trades work on the task marketplace.',
    unlocks: ['marketplace (gold and above)'],
    requirements: ['gold or platinum passport', 'registered in the directory', 'DID signature authentication'],
  },
  {
    name: 'trusted_agent',
    level: 5,
    description: 'Established agent with a record of completed work.',
    unlocks: ['multi_agent (platinum)', 'governance (platinum)'],
    requirements: [
      'platinum passport, or gold or higher with completed tasks',
      'positive review history',
      'active marketplace participation',
    ],
  },
];
