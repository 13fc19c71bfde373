// bench/console_render.mjs — each console page's render time in a real browser (bench/console_render.sh
// starts tcld with a big lineage and runs this with tests/ui's pinned playwright-core).
// Per page, RUNS fresh navigations; the time is the page's own performance.now() when its rendered
// marker (<main data-state=ready>) appears: from the navigation's start to the page on screen, the
// API calls and the drawing included. Prints one line per page: median and worst ms.
import { createRequire } from 'node:module';

// The pinned playwright-core of tests/ui (tests/ui/setup.sh installs it there).
const { chromium } = createRequire(new URL('../tests/ui/package.json', import.meta.url))('playwright-core');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const runs = Number(args.runs ?? 5);
const browser = await chromium.launch({
  executablePath: process.env.TCL_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
await context.addInitScript((t) => sessionStorage.setItem('tcl.token', t), args.token);
const page = await context.newPage();
const res = await (await fetch(`${args.url}/v1/models`, { headers: { Authorization: `Bearer ${args.token}` } })).json();
const last = res.versions[res.versions.length - 1].version;
const pages = [['lineage', 'lineage'], [`version/${last}`, 'version'], ['quality', 'quality'], ['platforms', 'platforms'], ['jobs', 'jobs']];
let worstOfAll = 0;
for (const [hash, name] of pages) {
  const times = [];
  for (let i = 0; i < runs; ++i) {
    await page.goto('about:blank');
    await page.goto(`${args.url}/ui/#/${hash}`);
    await page.waitForSelector(`main[data-page="${name}"][data-state="ready"]`, { timeout: 60000 });
    times.push(await page.evaluate(() => performance.now()));
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)], worst = times[times.length - 1];
  worstOfAll = Math.max(worstOfAll, worst);
  const rows = await page.locator('main tr, main figure').count();
  console.log(`console_render: ${name.padEnd(9)} median ${median.toFixed(0).padStart(5)} ms  worst ${worst.toFixed(0).padStart(5)} ms  (${rows} rows/figures)`);
}
console.log(`console_render: every page under ${Math.ceil(worstOfAll)} ms (${res.versions.length} versions); target 1000 ms`);
await browser.close();
