/**
 * The custom search attributes the workflows upsert (DESIGN.md section 10 "Marketplace"), and the
 * check the worker makes at start-up. On a Temporal cluster they must be registered once per namespace
 * (`npm run temporal:setup`); the dev server declares them by flags (scripts/lib/temporalServer.ts).
 * An unregistered attribute fails the workflow task that upserts it, over and over, so the worker
 * refuses to start without them instead. test/unit/searchAttributes.test.ts checks that this list
 * names every defineSearchAttributeKey in workflows/.
 */
import proto from '@temporalio/proto';

import type { temporal as T } from '@temporalio/proto';

export type SearchAttributeKind = 'Keyword' | 'Double' | 'Int' | 'Bool' | 'Datetime' | 'Text' | 'KeywordList';

export const SEARCH_ATTRIBUTES: Readonly<Record<string, SearchAttributeKind>> = {
  TaskStatus: 'Keyword',
  EscrowStatus: 'Keyword',
  PosterDid: 'Keyword',
  ClaimerDid: 'Keyword',
  PriceHbar: 'Double',
};

const IVT = proto.temporal.api.enums.v1.IndexedValueType;

export const INDEXED_VALUE_TYPE: Record<SearchAttributeKind, T.api.enums.v1.IndexedValueType> = {
  Keyword: IVT.INDEXED_VALUE_TYPE_KEYWORD,
  Double: IVT.INDEXED_VALUE_TYPE_DOUBLE,
  Int: IVT.INDEXED_VALUE_TYPE_INT,
  Bool: IVT.INDEXED_VALUE_TYPE_BOOL,
  Datetime: IVT.INDEXED_VALUE_TYPE_DATETIME,
  Text: IVT.INDEXED_VALUE_TYPE_TEXT,
  KeywordList: IVT.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

export function kindOf(type: T.api.enums.v1.IndexedValueType | null | undefined): SearchAttributeKind | 'unknown' {
  const found = Object.entries(INDEXED_VALUE_TYPE).find(([, t]) => t === type);
  return (found?.[0] as SearchAttributeKind | undefined) ?? 'unknown';
}

/** the part of a client or worker connection this module uses */
export interface OperatorConnection {
  operatorService: {
    listSearchAttributes(req: T.api.operatorservice.v1.IListSearchAttributesRequest): Promise<T.api.operatorservice.v1.IListSearchAttributesResponse>;
  };
}

export interface SearchAttributeProblems {
  /** not registered at all */
  missing: string[];
  /** registered with another type (cannot be changed: a new name is needed) */
  wrongType: { name: string; want: SearchAttributeKind; have: SearchAttributeKind | 'unknown' }[];
}

/** What the namespace lacks of SEARCH_ATTRIBUTES (custom and system attributes both count). */
export async function searchAttributeProblems(connection: OperatorConnection, namespace: string): Promise<SearchAttributeProblems> {
  const res = await connection.operatorService.listSearchAttributes({ namespace });
  const have = { ...(res.systemAttributes ?? {}), ...(res.customAttributes ?? {}) };
  const out: SearchAttributeProblems = { missing: [], wrongType: [] };
  for (const [name, want] of Object.entries(SEARCH_ATTRIBUTES)) {
    if (!(name in have)) out.missing.push(name);
    else if (have[name] !== INDEXED_VALUE_TYPE[want]) out.wrongType.push({ name, want, have: kindOf(have[name]) });
  }
  return out;
}

/** The one line the worker prints when it refuses to start; null when nothing is wrong. */
export function searchAttributeRefusal(problems: SearchAttributeProblems, namespace: string): string | null {
  const parts = [
    ...problems.missing.map((n) => `${n} (${SEARCH_ATTRIBUTES[n]}) is missing`),
    ...problems.wrongType.map((p) => `${p.name} is ${p.have}, needs ${p.want}`),
  ];
  if (!parts.length) return null;
  return `worker: refusing to start: search attribute ${parts.join(', ')} in namespace "${namespace}"; run \`npm run temporal:setup\` against this cluster (docs: README, "A Temporal cluster")`;
}
