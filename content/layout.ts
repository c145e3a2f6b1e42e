/**
 * The one layout of the HTML content pages (DESIGN.md section 10 "Content"): title, meta
 * description, canonical link, navigation, footer. Page bodies are markdown from content/pages/,
 * rendered with markdown-it with raw HTML disabled (html: false), so a source file cannot inject
 * markup; the few generated parts (/pricing tables, the /contact form) are built here with escaping.
 */
import MarkdownIt from 'markdown-it';

export interface PageMeta {
  /** the route, e.g. /faq */
  path: string;
  title: string;
  /** meta description (search engines, link previews) */
  description: string;
}

/** Navigation shown on every page (every target answers 200: the pages test follows them). */
export const NAV: ReadonlyArray<{ href: string; label: string }> = [
  { href: '/what-is-agent-readiness', label: 'Agent readiness' },
  { href: '/agent-readiness-checklist', label: 'Checklist' },
  { href: '/rules', label: 'Rules' },
  { href: '/use-cases', label: 'Use cases' },
  { href: '/pricing', label: 'Pricing' },
  { href: '/faq', label: 'FAQ' },
  { href: '/comparisons', label: 'Comparisons' },
  { href: '/notes', label: 'Notes' },
  { href: '/about', label: 'About' },
  { href: '/contact', label: 'Contact' },
];

const FOOTER: ReadonlyArray<{ href: string; label: string }> = [
  { href: '/docs', label: 'API reference' },
  { href: '/openapi.json', label: 'OpenAPI' },
  { href: '/marketplace-guide', label: 'Marketplace guide (markdown)' },
  { href: '/medical-guide', label: 'Health-data guide (markdown)' },
  { href: '/feed', label: 'RSS feed' },
  { href: '/terms', label: 'Terms' },
  { href: '/privacy', label: 'Privacy' },
];

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** markdown-it as every page uses it: no raw HTML, no typographic replacements, links as written. */
export const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });

const CSS = `
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.55;color:#1b1f24;background:#fff}
header{border-bottom:1px solid #d8dde3;background:#f6f8fa}
.bar{max-width:60rem;margin:0 auto;padding:.7rem 1rem;display:flex;flex-wrap:wrap;align-items:center;gap:.4rem 1rem}
.brand{font-weight:700;color:#1b1f24;text-decoration:none;margin-right:.6rem}
nav{display:flex;flex-wrap:wrap;gap:.2rem .9rem}
nav a{color:#0a58ca;text-decoration:none;font-size:.95rem}
nav a[aria-current=page]{color:#1b1f24;font-weight:600}
main{max-width:60rem;margin:0 auto;padding:1rem 1rem 2rem}
h1{font-size:1.8rem;line-height:1.25}h2{font-size:1.3rem;margin-top:2rem}h3{font-size:1.08rem}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em;background:#f3f4f6;border-radius:4px}
code{padding:.1em .3em}pre{padding:.8rem;overflow-x:auto}pre code{padding:0;background:none}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #d8dde3;padding:.35rem .7rem;text-align:left}th{background:#f6f8fa}
blockquote{margin:1rem 0;padding:.2rem 1rem;border-left:4px solid #d8dde3;color:#57606a}
footer{border-top:1px solid #d8dde3;color:#57606a;font-size:.9rem}
footer .bar a{color:#57606a}
form label{display:block;margin:.8rem 0 .2rem;font-weight:600}
form input,form textarea{width:100%;max-width:36rem;padding:.45rem;border:1px solid #b6bec8;border-radius:4px;font:inherit}
form button{display:block;margin-top:1rem;padding:.5rem 1.2rem;font:inherit;border:0;border-radius:4px;background:#0a58ca;color:#fff;cursor:pointer}
.note{color:#57606a;font-size:.92rem}
.rule{border:1px solid #d8dde3;border-radius:6px;padding:.8rem 1rem;margin:.8rem 0}.rule h3{font-size:1.05rem;margin:0}
.meta{color:#57606a;font-size:.9em}dt{font-weight:600}dd{margin:0 0 .5rem 0}
`;

/** A whole HTML page around `bodyHtml` (already safe HTML). `base` is the public base URL, no trailing slash. */
export function renderLayout(page: PageMeta, bodyHtml: string, base: string): string {
  const nav = NAV.map((n) => `<a href="${n.href}"${n.href === page.path ? ' aria-current="page"' : ''}>${escapeHtml(n.label)}</a>`).join('\n');
  const footer = FOOTER.map((n) => `<a href="${n.href}">${escapeHtml(n.label)}</a>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} · Agent Passport</title>
<meta name="description" content="${escapeHtml(page.description)}">
<link rel="canonical" href="${escapeHtml(base + page.path)}">
<link rel="alternate" type="application/rss+xml" title="New agents and tasks" href="/feed">
<link rel="icon" href="data:,">
<style>${CSS}</style>
</head>
<body>
<header><div class="bar"><a class="brand" href="/what-is-agent-readiness">Agent Passport</a>
<nav aria-label="Main">
${nav}
</nav></div></header>
<main>
${bodyHtml}
</main>
<footer><div class="bar">
${footer}
</div></footer>
</body>
</html>
`;
}
