// tests/ui/console_test.mjs — the web console (ui/) in a real browser: Debian's chromium, headless,
// driven by the pinned playwright-core (package.json). Started by tests/ui/console_e2e_test.cc, which
// runs PostgreSQL and tcld and builds what the pages must show; this script opens each page against
// that tcld, checks what it shows against the API's own answers, and keeps a screenshot of each.
//
//   node console_test.mjs --url http://127.0.0.1:PORT --token READ_TOKEN --out DIR --mode hostile|lineage|job
//     [--job ID]        (mode job: the running job whose progress must move)
//     [--hostile TEXT]  (a name or description the page must show as text, exactly)
//
// Prints "ok <check>" or "FAIL <check>: <why>" per check and exits 1 when any failed. Bounded: each
// wait has its own timeout, and the whole run stops after --budget-s (default 150).
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const base = args.url;
const out = args.out;
const mode = args.mode ?? 'lineage';
mkdirSync(out, { recursive: true });
setTimeout(() => { console.log(`FAIL budget: still running after ${args['budget-s'] ?? 150} s`); process.exit(1); },
  1000 * Number(args['budget-s'] ?? 150)).unref();

let failed = 0;
function check(name, ok, why = '') {
  if (ok) console.log(`ok ${name}`);
  else { failed += 1; console.log(`FAIL ${name}: ${why}`); }
}
async function api(path) {
  const res = await fetch(base + path, { headers: { Authorization: `Bearer ${args.token}` } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

const browser = await chromium.launch({
  executablePath: process.env.TCL_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
const page = await context.newPage();
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
page.on('dialog', (d) => { problems.push(`a dialog opened: ${d.message()}`); d.dismiss(); });
// Nothing may be loaded from another host.
const foreign = [];
page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url()); });

async function open(hash, name) {
  const t0 = Date.now();
  await page.goto(`${base}/ui/#/${hash}`);
  await page.waitForSelector(`main[data-page="${name}"][data-state="ready"]`, { timeout: 20000 });
  return Date.now() - t0;
}
async function shot(file) {
  await page.screenshot({ path: join(out, file), fullPage: true });
  console.log(`screenshot ${join(out, file)}`);
}
const text = (sel) => page.locator(sel).allTextContents();

try {
  // The console's own answer: CSP without inline script, nosniff, an ETag.
  const res = await page.goto(`${base}/ui`);
  const h = res.headers();
  check('csp header', /script-src 'self'/.test(h['content-security-policy'] ?? '') &&
    !/unsafe-inline/.test(h['content-security-policy']), h['content-security-policy']);
  check('nosniff header', h['x-content-type-options'] === 'nosniff', h['x-content-type-options']);
  check('etag header', Boolean(h.etag), JSON.stringify(h));
  // No token yet: the form; the token typed once, kept in sessionStorage, never in the URL.
  await page.waitForSelector('main[data-state="login"] #token', { timeout: 20000 });
  await shot('00-login.png');
  await page.fill('#token', args.token);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('main[data-page="lineage"][data-state="ready"]', { timeout: 20000 });
  const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('tcl.token'), local: localStorage.length, url: location.href }));
  check('token in sessionStorage', stored.session === args.token, JSON.stringify(stored.session));
  check('token not in localStorage or the URL', stored.local === 0 && !stored.url.includes(args.token), stored.url);
  // A new page in the same tab keeps it (sessionStorage); a wrong token is refused with the API's words.
  await open('platforms', 'platforms');
  check('token kept across pages', (await page.locator('#token').count()) === 0);

  const { platforms } = await api('/v1/platforms');
  const { versions } = await api('/v1/models');

  if (mode === 'hostile') {
    const hostile = args.hostile;
    const descs = await text('tr[data-platform] .desc');
    check('hostile description shown as text', descs.includes(hostile), JSON.stringify(descs));
    const targets = await text('tr[data-platform] code.target');
    check('hostile target shown as text', targets.some((t) => t === hostile), JSON.stringify(targets));
    check('no element made from the hostile text',
      (await page.locator('main img, main script, main iframe, main b.pwned').count()) === 0);
    check('no hostile script ran', (await page.evaluate(() => window.pwned)) === undefined);
    await shot('10-hostile-platforms.png');
    // The same text on the jobs page (a job of the hostile platform) and the lineage's empty state.
    await open('jobs', 'jobs');
    check('no hostile script ran on jobs', (await page.evaluate(() => window.pwned)) === undefined);
    await open('quality', 'quality');
    await page.waitForSelector('div.plots[data-plots="complete"]', { timeout: 20000 });
    check('quality shows each platform', (await page.locator('figure.quality').count()) === platforms.length);
    check('no hostile script ran on quality', (await page.evaluate(() => window.pwned)) === undefined);
  }

  if (mode === 'lineage') {
    // Lineage: every version a row of the tree, its status, aliases, the platforms it added, the gate.
    let ms = await open('lineage', 'lineage');
    await page.waitForSelector('table.lineage[data-rows="complete"]', { timeout: 20000 });  // the rows after the first screenful
    const rows = await page.locator('table.lineage tbody tr').count();
    check('lineage has a row per version', rows === versions.length, `${rows} rows, ${versions.length} versions`);
    for (const v of versions) {
      const row = page.locator(`table.lineage tr[data-version="${v.version}"]`);
      const t = await row.textContent();
      check(`lineage v${v.version} status ${v.status}`, t.includes(v.status), t);
      for (const a of v.aliases) check(`lineage v${v.version} alias ${a}`, t.includes(a), t);
      for (const line of v.status_reasons?.blocking ?? []) check(`lineage v${v.version} shows why`, t.includes(line), t);
      check(`lineage v${v.version} has its node`, (await row.locator('svg.tree circle').count()) === 1);
    }
    const candidate = versions.find((v) => v.status === 'candidate');
    check('the lineage holds a refused candidate', Boolean(candidate), JSON.stringify(versions.map((v) => v.status)));
    check('the tree draws parent links', (await page.locator('svg.tree line').count()) >= versions.length - 1);
    console.log(`render lineage ${ms} ms`);
    await shot('01-lineage.png');

    // Version: click through from the lineage to the candidate.
    await page.click(`table.lineage tr[data-version="${candidate.version}"] td.num a`);
    await page.waitForSelector(`main[data-page="version"][data-state="ready"]`, { timeout: 20000 });
    const vt = await page.locator('main').textContent();
    check('version page names the version', vt.includes(`Version ${candidate.version}`), vt.slice(0, 200));
    for (const p of candidate.platforms) {
      const row = page.locator(`table.version tr[data-platform="${p}"]`);
      check(`version row for ${p}`, (await row.count()) === 1);
      const fig = candidate.metrics[p]?.standing_split?.top1 ?? candidate.metrics[p]?.top1;
      const rt = await row.textContent();
      check(`version ${p} top-1 ${fig?.toFixed(3)}`, typeof fig === 'number' && rt.includes(fig.toFixed(3)), rt);
      const vp = candidate.metrics.versus_parent?.[p];
      if (vp?.top1 !== undefined) check(`version ${p} paired comparison`, rt.includes(`${vp.tasks} tasks`) && rt.includes('change'), rt);
    }
    for (const line of candidate.status_reasons?.reasons ?? []) check('version shows a gate reason', vt.includes(line), line);
    await shot('02-version-candidate.png');
    const distill = versions.find((v) => v.config?.kind === 'distill' && v.status === 'promoted') ?? versions[versions.length - 1];
    await open(`version/${distill.version}`, 'version');
    await shot('03-version-distill.png');
    // A best-of version (the default distill): each platform's row says the model its serving names.
    const bestOf = versions.find((v) => v.config?.distill?.method === 'best-of');
    check('the lineage holds a best-of version', Boolean(bestOf), JSON.stringify(versions.map((v) => v.config?.distill?.method)));
    if (bestOf) {
      await open(`version/${bestOf.version}`, 'version');
      for (const p of bestOf.platforms) {
        const s = bestOf.serving?.[p];
        const rt = await page.locator(`table.version tr[data-platform="${p}"]`).textContent();
        check(`best-of v${bestOf.version} ${p} served by ${s?.model}: ${s?.origin}`,
          typeof s?.model === 'string' && rt.includes(`${s.model}: ${s.origin}`), rt);
      }
      await shot('03-version-best-of.png');
    }

    // Quality over time: a plot per platform, a point per version that covers it.
    ms = await open('quality', 'quality');
    await page.waitForSelector('div.plots[data-plots="complete"]', { timeout: 20000 });  // the plots after the first screenful
    for (const p of platforms) {
      const covering = versions.filter((v) => v.platforms.includes(p.name) && v.metrics?.[p.name]);
      const fig = page.locator(`figure.quality[data-platform="${p.name}"]`);
      check(`quality plot for ${p.name}`, (await fig.count()) === 1);
      if (covering.length) {
        check(`quality ${p.name} has ${covering.length} points`, (await fig.locator('circle.dot.model').count()) === covering.length);
      }
    }
    console.log(`render quality ${ms} ms`);
    await shot('04-quality.png');
    await page.selectOption('#metric', 'pairwise_accuracy');
    check('quality switches figure', (await page.locator('figure.quality figcaption').first().textContent()).includes('pairwise'));

    // Platforms: counts, target and hardware, onboarding state, rounds.
    ms = await open('platforms', 'platforms');
    for (const p of platforms) {
      const d = await api(`/v1/platforms/${p.name}`);
      const s = await api(`/v1/platforms/${p.name}/sample-requests`);
      const t = await page.locator(`table.platforms tr[data-platform="${p.name}"]`).textContent();
      check(`platforms ${p.name} measurements ${d.counts.measurements}`, t.includes(String(d.counts.measurements)), t);
      check(`platforms ${p.name} state ${d.onboarding.state}`, t.includes(d.onboarding.state), t);
      check(`platforms ${p.name} target`, t.includes(p.target), t);
      for (const r of s.sample_requests) {
        check(`platforms ${p.name} round #${r.id}`, t.includes(`picked ${r.items_total}, measured ${r.items_measured}`), t);
      }
    }
    console.log(`render platforms ${ms} ms`);
    await shot('05-platforms.png');

    // Tuning runs: each stored run a row, and its curve drawn (an SVG path through its rounds).
    ms = await open('tuning', 'tuning');
    const runs = (await Promise.all(platforms.map((p) => api(`/v1/platforms/${p.name}/tuning-runs`)))).flatMap((l) => l.runs);
    check('a tuning run is stored', runs.length > 0);
    for (const r of runs) {
      const t = await page.locator(`table.tuning tr[data-run="${r.id}"][data-platform="${r.platform}"]`).textContent();
      check(`tuning ${r.id} row`, t.includes(r.network) && t.includes(r.model) && t.includes(String(r.rounds.length)), t);
      const d = await page.locator(`figure.tuning[data-run="${r.id}"] svg.plot path.series`).getAttribute('d');
      const points = r.rounds.filter((x) => x.network_seconds !== null).length;
      check(`tuning ${r.id} curve`, (d ?? '').split(/[ML]/).filter(Boolean).length === points, d);
    }
    console.log(`render tuning ${ms} ms`);
    await shot('08-tuning.png');
  }

  if (mode === 'job') {
    // Jobs: the running job's progress moves without a reload.
    await open('jobs', 'jobs');
    const row = page.locator(`tr[data-job="${args.job}"]`);
    await page.waitForSelector(`tr[data-job="${args.job}"][data-state="running"] td.progress:has-text("epoch")`, { timeout: 60000 });
    const first = await row.locator('td.progress').textContent();
    await shot('06-jobs-running.png');
    const navigations = [];
    page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations.push(f.url()); });
    let later = first;
    const deadline = Date.now() + 60000;
    while (later === first && Date.now() < deadline) {
      await page.waitForTimeout(500);
      later = await row.locator('td.progress').textContent().catch(() => first);
    }
    check('job progress moves', later !== first, `stayed "${first}"`);
    check('without reloading', navigations.length === 0, navigations.join(' '));
    console.log(`progress "${first}" -> "${later}"`);
    await shot('07-jobs-moved.png');
  }

  check('no page or console errors (CSP violations included)', problems.length === 0, problems.join(' | '));
  check('nothing loaded from another host', foreign.length === 0, foreign.join(' '));
} catch (e) {
  check('run', false, e.stack ?? String(e));
  await shot('99-failure.png').catch(() => {});
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
