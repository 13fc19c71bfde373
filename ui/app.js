// ui/app.js — the console's entry: the token form, the pages by URL fragment (#/lineage,
// #/version/3, #/quality, #/platforms, #/platforms/x86-16c, #/jobs, #/tuning), and the rendered
// marker the browser tests and the benchmark wait for: <main data-page=NAME data-state=ready>, with
// window.tclRendered = {page, ms, at} (ms from the route's start to the page on screen; at: since the navigation).
import { token, setToken, forgetToken, ApiError } from './api.js';
import { el } from './dom.js';
import * as lineage from './lineage.js';
import * as version from './version.js';
import * as quality from './quality.js';
import * as platforms from './platforms.js';
import * as jobs from './jobs.js';
import * as tuning from './tuning.js';

const PAGES = { lineage, version, quality, platforms, jobs, tuning };

let stopPage = null;
let generation = 0;

function loginForm(main, message) {
  const input = el('input', { type: 'password', id: 'token', autocomplete: 'off', spellcheck: 'false', required: 'required',
    placeholder: 'bearer token (read is enough)' });
  const form = el('form', { id: 'login' },
    el('h1', null, 'TCL console'),
    el('p', null, 'Type a tcld token (scope read is enough: ', el('code', null, 'tcld token create --name me --scope read'),
      '). It is kept in this tab\'s sessionStorage only, and sent as Authorization: Bearer to this tcld\'s API.'),
    message ? el('p', { class: 'error' }, message) : null,
    el('label', { for: 'token' }, 'Token '), input, ' ', el('button', { type: 'submit' }, 'Open'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    setToken(t);
    route();
  });
  main.replaceChildren(form);
  main.dataset.state = 'login';
  input.focus();
}

function session() {
  const span = document.getElementById('session');
  if (!token()) {
    span.replaceChildren();
    return;
  }
  const button = el('button', { type: 'button', id: 'forget' }, 'Forget token');
  button.addEventListener('click', () => {
    forgetToken();
    route();
  });
  span.replaceChildren(el('span', { class: 'muted' }, 'token kept in this tab '), button);
}

async function route() {
  if (stopPage) {
    stopPage();
    stopPage = null;
  }
  const gen = ++generation;
  const t0 = performance.now();
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const name = parts[0] ?? 'lineage';
  const main = document.getElementById('main');
  main.dataset.page = name;
  main.dataset.state = 'loading';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('here', a.dataset.page === name || (name === 'version' && a.dataset.page === 'lineage'));
  }
  session();
  if (!token()) return loginForm(main);
  const page = PAGES[name];
  const fresh = el('div', { class: 'page' });
  let shown = false;
  // The page on screen: a page may call it itself before it is done (the lineage draws its first
  // rows, then the rest); only the first call counts.
  const ready = () => {
    if (gen !== generation || shown) return;
    shown = true;
    main.replaceChildren(fresh);
    main.dataset.state = 'ready';
    const at = performance.now();
    window.tclRendered = { page: name, ms: at - t0, at };
  };
  try {
    if (!page) throw new Error(`no page '${name}'`);
    const stop = await page.render(fresh, parts[1], ready);  // may call ready() before it resolves
    if (typeof stop === 'function') {
      if (gen === generation) stopPage = stop;
      else stop();
    }
    ready();
  } catch (e) {
    if (gen !== generation) return;
    if (e instanceof ApiError && e.status === 401) {
      forgetToken();
      session();
      return loginForm(main, `tcld refused the token: ${e.message}`);
    }
    main.replaceChildren(el('h1', null, 'Something went wrong'), el('p', { class: 'error' }, e.message));
    main.dataset.state = 'error';
  }
}

window.addEventListener('hashchange', route);
route();
