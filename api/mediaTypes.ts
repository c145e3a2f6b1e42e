/**
 * Choosing a representation by the request's Accept header (RFC 9110 12.5.1): each offered media
 * type gets the quality of the most specific range that matches it (type/subtype, then type/*, then
 * *\/*); the highest quality wins, ties going to the earlier offer. No Accept, or one that names none
 * of the offers, gets the first offer: a representation is answered rather than a 406, as RFC 9110
 * 12.5.1 allows.
 */
interface AcceptRange {
  type: string;
  subtype: string;
  q: number;
}

function parseAccept(accept: string): AcceptRange[] {
  const ranges: AcceptRange[] = [];
  for (const part of accept.split(',').slice(0, 32)) {
    const [range, ...params] = part.split(';');
    const [type, subtype] = (range ?? '').trim().toLowerCase().split('/');
    if (!type || !subtype) continue;
    const qParam = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    ranges.push({ type, subtype, q: Number.isFinite(q) && q >= 0 && q <= 1 ? q : 0 });
  }
  return ranges;
}

/** The quality the ranges give one media type (-1: no range matches it). */
function qualityOf(mediaType: string, ranges: AcceptRange[]): number {
  const [type, subtype] = mediaType.split('/') as [string, string];
  let best = -1;
  let specificity = -1;
  for (const r of ranges) {
    const s = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : r.type === '*' && r.subtype === '*' ? 0 : -1;
    if (s > specificity) {
      specificity = s;
      best = r.q;
    }
  }
  return best;
}

/** The offered media type (lower case, without parameters) the Accept header prefers; the first when it names none. */
export function preferredMediaType(accept: string | undefined, offered: readonly string[]): string {
  if (!accept) return offered[0]!;
  const ranges = parseAccept(accept);
  let chosen = offered[0]!;
  let chosenQ = 0;
  for (const mediaType of offered) {
    const q = qualityOf(mediaType, ranges);
    if (q > chosenQ) {
      chosen = mediaType;
      chosenQ = q;
    }
  }
  return chosen;
}
