/**
 * Page bodies of /rules and /rules/{id}: the agent-readiness rule catalog and the conventions a
 * verifier needs (canonical JSON, evidence, Merkle tree, signature). The route wraps them in the
 * one content layout (content/layout.ts), so /rules has the same navigation, canonical link and
 * styles as every other page.
 */
import { escapeHtml, type PageMeta } from '../../content/layout.js';
import type { PublicRule } from '../../domain/trust/rules.js';
import { GRADE_THRESHOLDS, SIGNATURE_ALGORITHM } from '../../domain/trust/snapshot.js';

function ruleBlock(rule: PublicRule, headingLink: boolean): string {
  const title = `${escapeHtml(rule.id)} &middot; ${escapeHtml(rule.title)}`;
  return `<section class="rule" id="${escapeHtml(rule.id)}">
<h3>${headingLink ? `<a href="/rules/${escapeHtml(rule.id)}">${title}</a>` : title}</h3>
<p class="meta">weight ${rule.weight} &middot; fetches <code>GET ${escapeHtml(rule.fetches.path)}</code> (Accept: <code>${escapeHtml(rule.fetches.accept)}</code>) &middot; <a href="/rules/${escapeHtml(rule.id)}.json">JSON</a></p>
<dl>
<dt>Why</dt><dd>${escapeHtml(rule.why)}</dd>
<dt>How to fix</dt><dd>${escapeHtml(rule.fix)}</dd>
<dt>Passes when</dt><dd>${escapeHtml(rule.passes_when)}</dd>
</dl>
</section>`;
}

const CONVENTIONS = `<h2 id="verify">How to verify a snapshot</h2>
<p>Every answer of <code>GET /api/trust/{domain}</code> can be checked without trusting this service:</p>
<ol>
<li><strong>Probes.</strong> Each rule fetches one path of <code>https://{domain}</code> (listed with the rule) with
a GET, following at most 3 redirects, within the scan's time budget and a 256 KiB body cap, from public addresses only.</li>
<li><strong>Evidence.</strong> A rule's evidence hash is the lower-case hex sha256 of the body bytes of its probe's HTTP
answer, whatever the status (an empty body gives <code>e3b0c442…b855</code>). When no answer arrived (no address, refused
address, timeout, body over the cap, network error) it is the sha256 of the RFC 8785 JSON
<code>{"error":"&lt;reason&gt;","url":"&lt;probe URL&gt;"}</code>. <code>evidence_root.evidence_hashes</code> lists
one hash per rule, in catalog order (rules sharing a probe repeat its hash); <code>assertion_count</code> is their number.</li>
<li><strong>Merkle root.</strong> Leaves are the evidence hashes in that order. A parent is
<code>sha256(left || right)</code> over the two children's raw 32-byte digests (not their hex). On a level with an odd
number of nodes the last node is promoted unchanged to the next level. A single leaf is its own root.
<code>evidence_root.merkle_root</code> is the root in lower-case hex.</li>
<li><strong>Canonical JSON.</strong> <code>integrity.snapshot_hash</code> is the lower-case hex sha256 of the
RFC 8785 (JCS) canonical JSON of the whole snapshot without its <code>integrity</code> and <code>on_chain</code>
members (everything else, <code>_links</code> and <code>rule_results</code> included).</li>
<li><strong>Signature.</strong> <code>integrity.signature</code> is the ${SIGNATURE_ALGORITHM} (RFC 8032) signature,
lower-case hex of 64 bytes, of the <em>32 raw bytes</em> of the snapshot hash (not of its hex text).
<code>integrity.public_key</code> is the raw 32-byte public key in hex; the same key is published as a JWK (its
<code>x</code> in base64url) with <code>kid</code> = <code>integrity.key_id</code> at
<a href="/.well-known/http-message-signatures-directory"><code>/.well-known/http-message-signatures-directory</code></a>.</li>
<li><strong>Profile.</strong> <code>profile_ref.profile_hash</code> is the sha256 hex of the RFC 8785 JSON of
<code>{"profile_version": ..., "rules": [...]}</code> exactly as served at <a href="/rules.json"><code>/rules.json</code></a>
(each rule as at <code>/rules/{id}.json</code>).</li>
<li><strong>Score.</strong> A rule is <em>passed</em>, a <em>gap</em> (something to add or fix) or a <em>conflict</em>
(the domain publishes contradicting signals). <code>score_summary.total</code> = round(100 &times; weight of passed
rules / weight of all rules); the grade is ${GRADE_THRESHOLDS.map((g) => `${g.grade} from ${g.min}`).join(', ')}, F below.</li>
</ol>`;

export interface RenderedPage {
  meta: PageMeta;
  /** safe HTML for the layout's main element */
  body: string;
}

export function renderRulesPage(rules: readonly PublicRule[], profile: { version: string; hash: string }): RenderedPage {
  const total = rules.reduce((s, r) => s + r.weight, 0);
  return {
    meta: { path: '/rules', title: 'Agent-readiness rules', description: `The ${rules.length} agent-readiness rules a trust snapshot checks, their weights, and how to verify a snapshot's hashes and signature.` },
    body: `<h1>Agent-readiness rules</h1>
<p>The ${rules.length} rules a trust snapshot (<code>GET /api/trust/{domain}</code>) checks on a domain, with their weights
(total ${total}). Profile version <code>${escapeHtml(profile.version)}</code>, profile hash <code>${escapeHtml(profile.hash)}</code>
(<a href="/rules.json">JSON</a>). Jump to <a href="#verify">how to verify a snapshot</a>.</p>
${rules.map((r) => ruleBlock(r, true)).join('\n')}
${CONVENTIONS}`,
  };
}

export function renderRulePage(rule: PublicRule): RenderedPage {
  return {
    meta: { path: `/rules/${rule.id}`, title: `${rule.id} ${rule.title}`, description: `${rule.id}: ${rule.why}`.slice(0, 300) },
    body: `<p><a href="/rules">&larr; all rules</a></p>\n<h1>${escapeHtml(rule.id)}</h1>\n${ruleBlock(rule, false)}`,
  };
}
