// Every content page in headless Chromium (Debian's package, driven by puppeteer-core; DESIGN.md 10
// "Content"), against the real app over HTTP with PostgreSQL and a localnet: each page answers 200
// with no console error, carries its title, meta description, canonical link and the navigation;
// every internal link found on any page answers 200; a screenshot of each page is written to
// test-output/screenshots/. The contact form is submitted by the browser. /feed is parsed by
// Chromium's XML parser (DOMParser) and checked as RSS 2.0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { seedAgent, seedTask } from '../support/seedDirectory.js';
import { findOrInstallChromium } from '../../scripts/lib/chromium.js';
import { CONTACT_PAGE, GUIDES, PAGES } from '../../content/pages.js';
import { NAV, markdown } from '../../content/layout.js';
import { FEED_ITEMS } from '../../api/routes/feed.js';

const SCREENSHOTS = path.resolve('test-output/screenshots');

// Browser globals used inside page.evaluate callbacks (they run in Chromium; the project has no DOM lib).
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const DOMParser: any;
type Element = any;

interface Loaded {
  path: string;
  status: number;
  errors: string[];
  links: string[];
}

describe('content pages in headless Chromium', () => {
  let sql: Sql;
  let stack: LedgerStack;
  let app: FastifyInstance;
  let browser: Browser;
  let userDataDir: string;
  let base: string;
  const loaded = new Map<string, Loaded>();
  const tok = `pg${process.pid}`;
  const hostileTitle = `feed task ${tok} hostile ]]> one ]]></title><link>https://evil.example/forged</link><title><![CDATA[ <b>bold</b>`;
  const hostileDescription = '<img src="x" onerror="alert(1)"><a href="https://evil.example/">click</a> ]]> & ]]> <script>alert(2)</script>';
  let hostile: { taskId: string };

  const open = async (pagePath: string): Promise<{ page: Page; loaded: Loaded }> => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`pageerror: ${String(e)}`));
    page.on('requestfailed', (r) => errors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`http ${r.status()}: ${r.url()}`);
    });
    await page.setViewport({ width: 1200, height: 900 });
    const res = await page.goto(base + pagePath, { waitUntil: 'load' });
    const links = await page.$$eval('a[href]', (as) => as.map((a) => (a as unknown as { href: string }).href));
    const l: Loaded = { path: pagePath, status: res?.status() ?? 0, errors, links };
    return { page, loaded: l };
  };

  beforeAll(async () => {
    const executablePath = await findOrInstallChromium((line) => process.stderr.write(`[chromium] ${line}\n`));
    sql = createSql(inject('databaseUrl'), { max: 6 });
    stack = await startLedgerStack('pages');
    // the browser posts from 127.0.0.1, as the fuzz test does into the same database: lift the contact cap
    app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '100000', CONTACT_HOURLY_CAP_PER_IP: '100000' }, { sql, ledger: stack.ledger });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const addr = app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('no address');
    base = `http://127.0.0.1:${addr.port}`;
    const seq = 3_000_000_000 + (process.pid % 1000) * 10;
    await seedAgent(sql, { name: `feed-agent-${tok}-one`, skills: ['feeds'], sequence: seq + 1, timestamp: Date.parse('2030-01-01T00:00:00Z') });
    await seedAgent(sql, { name: `feed-agent-${tok}-two`, sequence: seq + 2, timestamp: Date.parse('2030-01-03T00:00:00Z') });
    await seedTask(sql, { title: `feed task ${tok} <first> & co`, description: 'An "escaped" description', createdAt: '2030-01-02T00:00:00.000Z' });
    await seedTask(sql, { title: `feed task ${tok} second`, createdAt: '2030-01-04T00:00:00.000Z' });
    // issue 19 item 9: a title that closes the CDATA twice to forge a <link>, and HTML in the description
    hostile = await seedTask(sql, { title: hostileTitle, description: hostileDescription, createdAt: '2030-01-05T00:00:00.000Z' });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chromium-profile-'));
    browser = await puppeteer.launch({
      executablePath,
      headless: true,
      userDataDir,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
    await app?.close();
    await stack?.stop();
    await sql?.end();
  });

  const layoutPages = [...PAGES, CONTACT_PAGE];

  it.each(layoutPages.map((p) => [p.path, p] as const))('%s loads with title, description, canonical link and navigation', async (pagePath, meta) => {
    const { page, loaded: l } = await open(pagePath);
    try {
      expect(l.status).toBe(200);
      const head = await page.evaluate(() => ({
        title: document.title,
        description: document.querySelector('meta[name="description"]')?.getAttribute('content'),
        canonical: document.querySelector('link[rel="canonical"]')?.getAttribute('href'),
        nav: [...document.querySelectorAll('nav a')].map((a) => a.getAttribute('href')),
        h1: document.querySelector('main h1')?.textContent,
        scripts: document.querySelectorAll('main script').length,
      }));
      expect(head.title).toBe(`${meta.title} · Agent Passport`);
      expect(head.description).toBe(meta.description);
      expect(head.canonical).toBe(base + pagePath);
      expect(head.nav).toEqual(NAV.map((n) => n.href));
      expect(head.h1?.length).toBeGreaterThan(0);
      expect(head.scripts).toBe(0);
      await page.screenshot({ path: path.join(SCREENSHOTS, `${pagePath.slice(1) || 'index'}.png`) as `${string}.png`, fullPage: true });
      expect(l.errors).toEqual([]);
      loaded.set(pagePath, l);
    } finally {
      await page.close();
    }
  });

  it('/rules (the trust routes\' page) loads without errors and is in the navigation', async () => {
    const { page, loaded: l } = await open('/rules');
    try {
      expect(l.status).toBe(200);
      await page.screenshot({ path: path.join(SCREENSHOTS, 'rules.png'), fullPage: true });
      expect(l.errors).toEqual([]);
      loaded.set('/rules', l);
    } finally {
      await page.close();
    }
    expect(NAV.map((n) => n.href)).toContain('/rules');
  });

  it('every internal link on every page answers 200', async () => {
    expect(loaded.size).toBe(layoutPages.length + 1);
    const targets = new Set<string>();
    for (const l of loaded.values()) {
      for (const href of l.links) {
        const u = new URL(href);
        if (u.origin !== base) continue;
        u.hash = '';
        targets.add(u.toString());
      }
    }
    for (const g of GUIDES) targets.add(base + g.path);
    expect(targets.size).toBeGreaterThan(layoutPages.length);
    const failures: string[] = [];
    for (const t of targets) {
      const res = await fetch(t);
      await res.arrayBuffer();
      if (res.status !== 200) failures.push(`${res.status} ${t}`);
    }
    expect(failures).toEqual([]);
  });

  it('serves the guides as text/markdown', async () => {
    for (const g of GUIDES) {
      const res = await fetch(base + g.path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(await res.text()).toMatch(/^# /);
    }
  });

  it('renders markdown without raw HTML', () => {
    expect(markdown.render('<script>alert(1)</script> [x](javascript:alert(1))')).not.toMatch(/<script|href="javascript:/);
  });

  it('submits the contact form from the browser', async () => {
    const { page } = await open('/contact');
    try {
      await page.type('#name', 'Browser User');
      await page.type('#email', 'browser@example.org');
      await page.type('#message', `Sent by Chromium ${tok}`);
      const [res] = await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type="submit"]')]);
      expect(res?.status()).toBe(201);
      expect(await page.$eval('main h1', (h) => h.textContent)).toBe('Message received');
      const [row] = await sql`select name, email from contact_messages where message = ${`Sent by Chromium ${tok}`}`;
      expect(row).toEqual({ name: 'Browser User', email: 'browser@example.org' });
    } finally {
      await page.close();
    }
  });

  it('/feed parses as RSS 2.0 (Chromium\'s XML parser): channel and item elements, newest first, bounded', async () => {
    const { page } = await open('/faq');
    try {
      const feed = await page.evaluate(async () => {
        const res = await fetch('/feed');
        const text = await res.text();
        const doc = new DOMParser().parseFromString(text, 'application/xml');
        const child = (el: Element, name: string) => [...el.children].find((c) => c.tagName === name)?.textContent ?? null;
        // what a reader that treats the text as HTML shows, and how many elements it would render
        const asHtml = (s: string | null) => {
          const body = new DOMParser().parseFromString(s ?? '', 'text/html').body;
          return { text: body.textContent as string, elements: body.querySelectorAll('*').length as number };
        };
        const channel = doc.documentElement.querySelector(':scope > channel');
        return {
          status: res.status,
          type: res.headers.get('content-type'),
          parseError: doc.getElementsByTagName('parsererror').length > 0,
          root: doc.documentElement.tagName,
          version: doc.documentElement.getAttribute('version'),
          channels: doc.documentElement.querySelectorAll(':scope > channel').length,
          channel: channel && { title: child(channel, 'title'), link: child(channel, 'link'), description: child(channel, 'description') },
          items: channel
            ? [...channel.querySelectorAll(':scope > item')].map((i) => ({
                title: child(i, 'title'),
                link: child(i, 'link'),
                guid: child(i, 'guid'),
                pubDate: child(i, 'pubDate'),
                description: child(i, 'description'),
                titleHtml: asHtml(child(i, 'title')),
                descriptionHtml: asHtml(child(i, 'description')),
              }))
            : [],
        };
      });
      expect(feed.status).toBe(200);
      expect(feed.type).toBe('application/rss+xml; charset=utf-8');
      expect(feed.parseError).toBe(false);
      expect(feed.root).toBe('rss');
      expect(feed.version).toBe('2.0');
      expect(feed.channels).toBe(1);
      expect(feed.channel?.title).toBeTruthy();
      expect(feed.channel?.link).toBe(`${base}/`);
      expect(feed.channel?.description).toBeTruthy();
      expect(feed.items.length).toBeGreaterThanOrEqual(4);
      expect(feed.items.length).toBeLessThanOrEqual(FEED_ITEMS);
      for (const i of feed.items) {
        expect(i.title).toBeTruthy();
        expect(i.link).toMatch(new RegExp(`^${base}/(agents|market/tasks)/`));
        expect(i.guid).toBeTruthy();
        expect(i.description).not.toBeNull();
        expect(Number.isNaN(Date.parse(i.pubDate ?? ''))).toBe(false);
      }
      const times = feed.items.map((i) => Date.parse(i.pubDate!));
      expect(times).toEqual([...times].sort((a, b) => b - a));
      // text, never markup: no title or description renders an element in a reader that reads it as HTML
      for (const i of feed.items) expect([i.titleHtml.elements, i.descriptionHtml.elements]).toEqual([0, 0]);
      // the seeded rows, newest first, titles as the reader shows them
      const mine = feed.items.filter((i) => i.titleHtml.text.includes(tok)).map((i) => i.titleHtml.text);
      expect(mine).toEqual([`Task posted: ${hostileTitle}`, `Task posted: feed task ${tok} second`, `Agent registered: feed-agent-${tok}-two`, `Task posted: feed task ${tok} <first> & co`, `Agent registered: feed-agent-${tok}-one`]);
      // the hostile task is exactly one item, its text intact, and no item links anywhere but here
      const forged = feed.items.filter((i) => i.link?.endsWith(`/market/tasks/${hostile.taskId}`));
      expect(forged).toHaveLength(1);
      expect(forged[0].descriptionHtml.text).toBe(`12.5 HBAR, status posted; needs data_provide. ${hostileDescription}`);
      expect(feed.items.filter((i) => !i.link?.startsWith(`${base}/`))).toEqual([]);
      // every item's link answers 200 (agents and tasks from memory)
      for (const i of feed.items.filter((x) => x.titleHtml.text.includes(tok))) expect((await fetch(i.link!)).status).toBe(200);
    } finally {
      await page.close();
    }
  });
});
