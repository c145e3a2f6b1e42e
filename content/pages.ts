/**
 * The content of the site (SPEC 4.7; DESIGN.md section 10 "Content"): the markdown guides served as
 * text/markdown and the HTML pages rendered from content/pages/*.md through the one layout
 * (content/layout.ts). Two pages append generated parts so they cannot drift from the code:
 * /pricing (the tier catalog and the fee catalog: one price list) and /agent-readiness-checklist
 * (the trust rule catalog the scanner applies).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildFeeCatalog } from '../domain/fees.js';
import { TIER_CATALOG, tierPriceTinybars } from '../domain/tiers.js';
import { PUBLIC_RULES } from '../domain/trust/rules.js';
import { escapeHtml, markdown, renderLayout, type PageMeta } from './layout.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** The markdown sources: beside this module (tsx), or the repository's content/ from dist/content/ (built). */
const DIR = existsSync(`${HERE}pages`) ? HERE : `${HERE}../../content/`;

function source(rel: string): string {
  return readFileSync(`${DIR}${rel}`, 'utf8');
}

/** Markdown guides: path -> source file (served as is, text/markdown). */
export const GUIDES: ReadonlyArray<{ path: string; file: string }> = [
  { path: '/marketplace-guide', file: 'guides/marketplace-guide.md' },
  // SPEC 4.7 names both paths; they serve the same guide
  { path: '/market-guide', file: 'guides/marketplace-guide.md' },
  { path: '/medical-guide', file: 'guides/medical-guide.md' },
];

export interface ContentPage extends PageMeta {
  file: string;
}

export const PAGES: readonly ContentPage[] = [
  { path: '/what-is-agent-readiness', file: 'pages/what-is-agent-readiness.md', title: 'What is agent readiness?', description: 'How software agents get a verifiable identity on the Hedera ledger and how a domain publishes the documents agents look for.' },
  { path: '/faq', file: 'pages/faq.md', title: 'FAQ', description: 'Questions agent developers ask about passports, payments, sign-in, registry keys, limits and private keys.' },
  { path: '/use-cases', file: 'pages/use-cases.md', title: 'Use cases', description: 'What the API is built for: agent identity, the directory, A2A messaging, the task marketplace, domain trust snapshots, chain events.' },
  { path: '/about', file: 'pages/about.md', title: 'About', description: 'What Agent Passport is, how it is built, and what it is not.' },
  { path: '/pricing', file: '', title: 'Pricing', description: 'Passport prices by tier, upgrade prices, the marketplace fee and the free parts of the API.' },
  { path: '/terms', file: 'pages/terms.md', title: 'Terms of use', description: 'How the service works and what you accept by using it.' },
  { path: '/privacy', file: 'pages/privacy.md', title: 'Privacy', description: 'What the service stores about you, where, and for how long.' },
  { path: '/agent-readiness-checklist', file: 'pages/agent-readiness-checklist.md', title: 'Agent-readiness checklist', description: 'The documents a domain can publish so agents can use it, as checked by the trust scanner.' },
  { path: '/notes', file: 'pages/notes.md', title: 'Notes for agent developers', description: 'Practical notes: error codes, 202 request_pending, rate-limit headers, signed requests, discovery documents.' },
  { path: '/comparisons', file: 'pages/comparisons.md', title: 'Comparisons', description: 'Passports vs. API keys, DID signatures vs. bearer tokens, escrow vs. direct payment, snapshots vs. audits.' },
];

export const CONTACT_PAGE: ContentPage = {
  path: '/contact',
  file: 'pages/contact.md',
  title: 'Contact',
  description: 'Send a question, bug report or security report to the operator of this instance.',
};

function hbar(n: number): string {
  return `${n.toLocaleString('en-US')} HBAR`;
}

/** The /pricing body from the catalogs (markdown, so it renders like every page). */
export function pricingMarkdown(marketFeeBps: number, network: string): string {
  const fees = buildFeeCatalog({ network, marketFeeBps });
  const tiers = TIER_CATALOG.map((t) => `| ${t.name} | ${hbar(t.price)} | ${tierPriceTinybars(t.name).toString()} | ${t.capabilities.map((c) => `\`${c}\``).join(', ')} |`);
  const upgrades = fees.fees.filter((f) => f.unit === 'per-upgrade').map((f) => `| ${f.description.replace(/^Upgrade a (\w+) passport to (\w+).*$/, '$1 → $2')} | ${hbar(f.price_hbar ?? 0)} |`);
  const free = fees.fees.filter((f) => f.free_tier).map((f) => `- ${f.description}${f.notes ? ` (${f.notes})` : ''}`);
  const market = fees.fees.find((f) => f.category === 'marketplace');
  return [
    '# Pricing',
    '',
    'One price list: this page, `GET /catalog` and the x402 payment requirements of `POST /passport/request` are all built from the same tier catalog. Prices are in HBAR, the Hedera network\'s own currency (1 HBAR = 100,000,000 tinybars).',
    '',
    '## Passports',
    '',
    '| tier | price | tinybars | capabilities |',
    '|---|---|---|---|',
    ...tiers,
    '',
    'A passport is paid once, over x402. Its capabilities are written into the NFT; a directory registration may list only capabilities its passport has.',
    '',
    '## Upgrades',
    '',
    'An upgrade keeps the same token and serial and costs the price difference.',
    '',
    '| upgrade | price |',
    '|---|---|',
    ...upgrades,
    '',
    '## Marketplace',
    '',
    market ? `${market.description}. ${market.notes ?? ''}.` : '',
    '',
    '## Free',
    '',
    ...free,
    '- Registry keys (`POST /api/v1/agents/register`), reads of the directory, tasks, catalogs, search and the feed.',
    '',
    `Every answer is subject to the rate limit. This instance runs on the \`${network}\` network; the machine-readable list is \`GET /api/meta/fees\`.`,
  ].join('\n');
}

/** The generated list of the checklist page. */
export function checklistMarkdown(): string {
  const lines = PUBLIC_RULES.map((r) => `- [${r.id}](/rules/${r.id}) **${r.title}** — \`GET ${r.fetches.path}\`. ${r.why}`);
  return ['', '## The rules', '', ...lines, '', 'Scoring, the evidence hashes and how to verify a signed snapshot are described on the [rules page](/rules).'].join('\n');
}

export interface ContentOptions {
  marketFeeBps: number;
  network: string;
}

/** Markdown source of every HTML page, generated parts included. */
export function pageMarkdown(page: ContentPage, opts: ContentOptions): string {
  if (page.path === '/pricing') return pricingMarkdown(opts.marketFeeBps, opts.network);
  const md = source(page.file);
  return page.path === '/agent-readiness-checklist' ? md + checklistMarkdown() : md;
}

/** The contact form (escaped HTML; posts application/x-www-form-urlencoded to POST /contact). */
export function contactFormHtml(limits: { name: number; email: number; message: number }): string {
  return `<form method="post" action="/contact">
<label for="name">Name</label>
<input id="name" name="name" required maxlength="${limits.name}" autocomplete="name">
<label for="email">Email</label>
<input id="email" name="email" type="email" required maxlength="${limits.email}" autocomplete="email">
<label for="message">Message</label>
<textarea id="message" name="message" rows="8" required maxlength="${limits.message}"></textarea>
<button type="submit">Send</button>
<p class="note">Stored for the operator of this instance (see <a href="/privacy">privacy</a>). At most ${limits.message} characters.</p>
</form>`;
}

/** Page renderer: bodies rendered once, whole pages cached per base URL (a few bases at most). */
export class ContentRenderer {
  private readonly bodies = new Map<string, string>();
  private readonly pages = new Map<string, Map<string, string>>();
  private static readonly MAX_BASES = 8;

  constructor(private readonly opts: ContentOptions & { contactLimits: { name: number; email: number; message: number } }) {
    for (const p of PAGES) this.bodies.set(p.path, markdown.render(pageMarkdown(p, opts)));
    this.bodies.set(CONTACT_PAGE.path, markdown.render(source(CONTACT_PAGE.file)) + contactFormHtml(opts.contactLimits));
  }

  /** The whole HTML page of `path` (one of PAGES or /contact) for this base URL. */
  page(path: string, base: string): string {
    let byPath = this.pages.get(base);
    if (!byPath) {
      byPath = new Map();
      if (this.pages.size < ContentRenderer.MAX_BASES) this.pages.set(base, byPath);
    }
    let html = byPath.get(path);
    if (html === undefined) {
      const meta = path === CONTACT_PAGE.path ? CONTACT_PAGE : PAGES.find((p) => p.path === path);
      if (!meta) throw new Error(`no content page ${path}`);
      html = renderLayout(meta, this.bodies.get(path)!, base);
      byPath.set(path, html);
    }
    return html;
  }

  /** A page outside the catalog (e.g. the contact confirmation), never cached. */
  adHoc(meta: PageMeta, markdownBody: string, base: string): string {
    return renderLayout(meta, markdown.render(markdownBody), base);
  }

  static guides(): Map<string, string> {
    return new Map(GUIDES.map((g) => [g.path, source(g.file)]));
  }
}

export { escapeHtml };
