// ui/tuning.js — Tuning runs: a later page. tclctl tune keeps each run on the client's disk
// (rounds.csv, curve.svg; docs/tuning.md); tcld has no tuning-run resource to read yet.
import { el } from './dom.js';

export async function render(main) {
  main.append(el('h1', null, 'Tuning runs'),
    el('p', { class: 'empty' }, 'Not in the API yet: `tclctl tune` keeps each run beside it (rounds.csv, curve.svg; ' +
      'docs/tuning.md). This page will plot their curves once tcld stores tuning runs.'));
}
