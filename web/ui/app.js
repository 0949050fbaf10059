// promhbase's web UI: one script for every page (the body's data-page
// names it), plain DOM, no framework and no build step (docs/ui.md). Every
// URL is relative, so the pages work below any route prefix; the API's
// requests carry the tenant picked (X-Scope-OrgID) when tenants are on.
'use strict';
(function () {
  const app = document.getElementById('app');
  const page = document.body.dataset.page;

  // ---- helpers ----

  // h builds an element: attrs' keys are properties (class, text, on*,
  // data-*, anything else as an attribute); children are nodes or strings.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked') el.checked = v;
      else el.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function tenant() {
    return localStorage.getItem('promhbase.tenant') || '';
  }

  // api requests path (relative) with params; post sends them as a form.
  // It resolves to the answer's data, warnings, infos and headers, and
  // rejects with the API's error (errorType: error) or the HTTP status.
  async function api(path, params, post) {
    const headers = {};
    if (tenant()) headers['X-Scope-OrgID'] = tenant();
    const usp = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      for (const x of Array.isArray(v) ? v : [v]) {
        if (x !== undefined && x !== null && x !== '') usp.append(k, x);
      }
    }
    let url = path;
    const init = { method: 'GET', headers };
    if (post) {
      init.method = 'POST';
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      init.body = usp.toString();
    } else if (usp.toString()) {
      url += '?' + usp.toString();
    }
    const r = await fetch(url, init);
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch (e) { json = null; }
    if (!r.ok || !json || json.status === 'error') {
      const msg = json && json.error ? `${json.errorType || 'error'}: ${json.error}`
        : `${r.status} ${r.statusText}: ${text.trim().slice(0, 400)}`;
      const err = new Error(msg);
      err.status = r.status;
      err.headers = r.headers;
      throw err;
    }
    return { data: json.data, warnings: json.warnings || [], infos: json.infos || [], headers: r.headers };
  }

  async function fetchText(path) {
    const headers = {};
    if (tenant()) headers['X-Scope-OrgID'] = tenant();
    const r = await fetch(path, { headers });
    return { status: r.status, text: await r.text() };
  }

  function errorBox(err) {
    return h('div', { class: 'error', role: 'alert' }, err.message || String(err));
  }

  function messages(warnings, infos) {
    return [
      ...(warnings || []).map((w) => h('div', { class: 'warning' }, 'warning: ' + w)),
      ...(infos || []).map((w) => h('div', { class: 'warning' }, 'info: ' + w)),
    ];
  }

  // fmtTime formats Unix seconds as UTC, to the second.
  function fmtTime(sec) {
    if (!isFinite(sec)) return '–';
    return new Date(sec * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }

  function fmtAgo(iso) {
    const t = Date.parse(iso);
    if (!isFinite(t) || t <= 0) return 'never';
    return fmtDuration((Date.now() - t) / 1000) + ' ago';
  }

  function fmtDuration(sec) {
    if (!isFinite(sec)) return '–';
    if (sec < 1) return (sec * 1000).toFixed(sec < 0.01 ? 2 : 0) + 'ms';
    const parts = [];
    for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60]]) {
      if (sec >= n) { parts.push(Math.floor(sec / n) + u); sec %= n; }
    }
    if (parts.length < 2) parts.push((parts.length ? Math.floor(sec) : sec.toFixed(sec < 10 ? 1 : 0)) + 's');
    return parts.join(' ');
  }

  function fmtBytes(b) {
    if (!isFinite(b)) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(b < 10 ? 2 : 1) : b) + ' ' + units[i];
  }

  function fmtNum(v) {
    if (v === null || v === undefined || !isFinite(v)) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
    return String(+v.toPrecision(6));
  }

  function fmtCount(n) {
    return Number(n).toLocaleString('en-US');
  }

  // fmtMetric formats a label set as PromQL writes a series: the name,
  // then the other labels in name order.
  function fmtMetric(m) {
    const name = m.__name__ || '';
    const keys = Object.keys(m).filter((k) => k !== '__name__').sort();
    if (!keys.length) return name || '{}';
    return name + '{' + keys.map((k) => `${k}=${JSON.stringify(m[k])}`).join(', ') + '}';
  }

  // parseDuration reads a Prometheus duration (1h30m, 2d, 90s, 1.5h) or a
  // number of seconds; NaN when it is neither.
  function parseDuration(s) {
    s = String(s || '').trim();
    if (/^\d+(\.\d+)?$/.test(s)) return parseFloat(s);
    const units = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
    let total = 0;
    let rest = s;
    const re = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/;
    if (!rest) return NaN;
    while (rest) {
      const m = re.exec(rest);
      if (!m) return NaN;
      total += parseFloat(m[1]) * units[m[2]];
      rest = rest.slice(m[0].length);
    }
    return total;
  }

  // parseTime reads an end time: empty (now), Unix seconds, or a UTC date
  // and time (2006-01-02 15:04:05, the seconds optional).
  function parseTime(s) {
    s = String(s || '').trim();
    if (!s) return Date.now() / 1000;
    if (/^\d+(\.\d+)?$/.test(s)) return parseFloat(s);
    let iso = s.replace(' ', 'T');
    if (!/[zZ]$|[+-]\d\d:?\d\d$/.test(iso)) iso += 'Z';
    const t = Date.parse(iso);
    return isFinite(t) ? t / 1000 : NaN;
  }

  function labelsList(m) {
    return h('span', { class: 'labels' }, Object.keys(m || {}).sort().map((k) => h('span', {}, `${k}="${m[k]}"`)));
  }

  function badge(text, cls) {
    return h('span', { class: 'badge ' + (cls || text) }, text);
  }

  function setParams(params) {
    const usp = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v !== undefined && v !== null && v !== '' && v !== false) usp.set(k, v === true ? '1' : v);
    }
    const q = usp.toString();
    history.replaceState(null, '', location.pathname + (q ? '?' + q : ''));
  }

  // ---- the tenant picker ----

  async function loadInfo() {
    const r = await fetch('ui/info.json');
    if (!r.ok) throw new Error(`ui/info.json: ${r.status} ${r.statusText}`);
    return r.json();
  }

  function setupTenant(info) {
    const q = new URLSearchParams(location.search).get('tenant');
    if (q !== null) localStorage.setItem('promhbase.tenant', q);
    if (!info.tenants) return;
    const box = document.getElementById('tenant-box');
    const input = document.getElementById('tenant');
    box.hidden = false;
    input.value = tenant();
    input.addEventListener('change', () => {
      localStorage.setItem('promhbase.tenant', input.value.trim());
      location.reload();
    });
  }

  // ---- the query page ----

  const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  const maxGraphSeries = 200;
  const maxTableRows = 1000;

  function loadHistory() {
    try { return JSON.parse(localStorage.getItem('promhbase.history') || '[]'); } catch (e) { return []; }
  }

  function queryPage() {
    const q = new URLSearchParams(location.search);
    const hist = loadHistory();
    const expr = h('textarea', { id: 'expr', rows: 1, spellcheck: 'false', placeholder: 'Expression (press Enter to run, Shift+Enter for a new line)',
      'aria-label': 'expression' });
    expr.value = q.get('g0.expr') || '';
    const range = h('input', { id: 'range', size: 6, value: q.get('g0.range_input') || '1h', title: 'range: 5m, 1h, 2d, 1w' });
    const end = h('input', { id: 'end', size: 19, value: q.get('g0.end_input') || '', placeholder: 'now', title: 'end (UTC): 2006-01-02 15:04:05, or Unix seconds; empty: now' });
    const step = h('input', { id: 'step', size: 6, value: q.get('g0.step_input') || '', placeholder: 'auto', title: 'resolution step: 15s, 1m; empty: range/250' });
    const stacked = h('input', { id: 'stacked', type: 'checkbox', checked: q.get('g0.stacked') === '1' });
    const histSel = h('select', { id: 'history', 'aria-label': 'history' });
    const fillHistory = (list) => {
      histSel.textContent = '';
      histSel.append(h('option', { value: '' }, `history (${list.length})`),
        ...list.map((e) => h('option', { value: e }, e.length > 80 ? e.slice(0, 77) + '…' : e)));
    };
    fillHistory(hist);
    const run = h('button', { id: 'run', type: 'button' }, 'Execute');
    const status = h('div', { id: 'query-status', class: 'status-line' });
    const msgs = h('div', { id: 'messages' });
    const graph = h('div', { id: 'graph' }, h('span', { class: 'muted' }, 'Enter an expression and press Enter.'));
    const tableHead = h('div', { class: 'status-line', id: 'table-status' });
    const tableWrap = h('div', { id: 'table-wrap', class: 'scroll' });

    app.append(
      h('div', { class: 'exprline' }, h('div', {}, expr), run),
      h('div', { class: 'row' },
        h('label', {}, 'range ', range), h('label', {}, 'end ', end), h('label', {}, 'step ', step),
        h('label', {}, stacked, ' stacked'), histSel, status),
      msgs, graph, tableHead, tableWrap);

    let seq = 0;
    let lastRange = null;
    async function execute() {
      const e = expr.value.trim();
      if (!e) return;
      const my = ++seq;
      const rangeSec = parseDuration(range.value);
      const endSec = parseTime(end.value);
      msgs.textContent = '';
      if (!(rangeSec > 0) || !isFinite(endSec)) {
        msgs.append(errorBox(new Error(!(rangeSec > 0) ? `range ${JSON.stringify(range.value)}: not a duration` : `end ${JSON.stringify(end.value)}: not a time`)));
        return;
      }
      let stepSec = step.value.trim() ? parseDuration(step.value) : Math.max(Math.floor(rangeSec / 250), 1);
      if (!(stepSec > 0)) {
        msgs.append(errorBox(new Error(`step ${JSON.stringify(step.value)}: not a duration`)));
        return;
      }
      const endT = Math.floor(endSec);
      const startT = endT - rangeSec;
      const h2 = [e, ...loadHistory().filter((x) => x !== e)].slice(0, 50);
      localStorage.setItem('promhbase.history', JSON.stringify(h2));
      fillHistory(h2);
      setParams({ 'g0.expr': e, 'g0.range_input': range.value, 'g0.end_input': end.value, 'g0.step_input': step.value, 'g0.stacked': stacked.checked });
      status.textContent = 'running…';
      graph.dataset.state = 'loading';
      const t0 = performance.now();
      const [rr, ir] = await Promise.allSettled([
        api('api/v1/query_range', { query: e, start: startT, end: endT, step: stepSec }, true),
        api('api/v1/query', { query: e, time: endT }, true),
      ]);
      if (my !== seq) return;
      const took = performance.now() - t0;
      const warnings = new Set();
      const infos = new Set();
      for (const r of [rr, ir]) {
        if (r.status === 'fulfilled') {
          r.value.warnings.forEach((w) => warnings.add(w));
          r.value.infos.forEach((w) => infos.add(w));
        }
      }
      const errs = [rr, ir].filter((r) => r.status === 'rejected').map((r) => r.reason.message);
      [...new Set(errs)].forEach((m) => msgs.append(errorBox(new Error(m))));
      msgs.append(...messages([...warnings], [...infos]));
      const parts = [h('span', {}, `took ${took.toFixed(0)} ms`)];
      const res = [rr, ir].map((r) => r.status === 'fulfilled' ? r.value.headers : r.reason.headers)
        .map((hd) => hd && hd.get('X-Promhbase-Resolution')).filter(Boolean);
      parts.push(h('span', {}, ' · resolution: ', h('b', { id: 'resolution' }, res.length ? [...new Set(res)].join(', ') : 'raw')));
      if (rr.status === 'fulfilled') {
        lastRange = { result: rr.value.data, start: startT, end: endT, step: stepSec };
        const n = rr.value.data.result.length;
        parts.push(h('span', {}, ` · ${n} series · step ${stepSec}s`));
        drawGraph(graph, lastRange, stacked.checked);
      } else {
        lastRange = null;
        graph.textContent = '';
        graph.dataset.state = 'error';
      }
      status.textContent = '';
      status.append(...parts);
      tableHead.textContent = '';
      tableWrap.textContent = '';
      if (ir.status === 'fulfilled') {
        tableHead.append(`Instant query at ${fmtTime(endT)}`);
        tableWrap.append(resultTable(ir.value.data, endT));
      }
    }

    let enterRuns = false; // the line break of an Enter that ran the query is not typed
    expr.addEventListener('keydown', (ev) => {
      enterRuns = ev.key === 'Enter' && !ev.shiftKey;
      if (enterRuns) {
        ev.preventDefault();
        execute();
      }
    });
    expr.addEventListener('beforeinput', (ev) => {
      if (enterRuns && (ev.inputType === 'insertLineBreak' || ev.inputType === 'insertParagraph')) ev.preventDefault();
      enterRuns = false;
    });
    expr.addEventListener('input', () => {
      expr.style.height = 'auto';
      expr.style.height = Math.min(expr.scrollHeight + 2, 200) + 'px';
    });
    run.addEventListener('click', execute);
    for (const el of [range, end, step]) {
      el.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') execute(); });
    }
    stacked.addEventListener('change', () => { if (lastRange) drawGraph(graph, lastRange, stacked.checked); });
    histSel.addEventListener('change', () => {
      if (!histSel.value) return;
      expr.value = histSel.value;
      histSel.value = '';
      execute();
    });
    let resizeTimer = 0;
    window.addEventListener('resize', () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => { if (lastRange) drawGraph(graph, lastRange, stacked.checked); }, 150);
    });
    expr.focus();
    if (expr.value) execute();
  }

  // drawGraph draws a range query's matrix with uPlot: one x value a step
  // from start to end, a series' missing steps as gaps; stacked, each
  // series is drawn on the sum of those before it (the legend shows its
  // own values).
  function drawGraph(el, r, stacked) {
    el.textContent = '';
    el.dataset.state = 'empty';
    const data = r.result;
    if (data.resultType !== 'matrix') {
      el.append(h('span', { class: 'muted' }, `A ${data.resultType} result has no graph: see the table below.`));
      return;
    }
    if (!data.result.length) {
      el.append(h('span', { class: 'muted', id: 'no-data' }, 'No data points in this range.'));
      return;
    }
    const n = Math.floor((r.end - r.start) / r.step) + 1;
    const xs = Array.from({ length: n }, (_, i) => r.start + i * r.step);
    const shown = data.result.slice(0, maxGraphSeries);
    const raw = shown.map((s) => {
      const ys = new Array(n).fill(null);
      for (const [t, v] of s.values || []) {
        const i = Math.round((t - r.start) / r.step);
        if (i >= 0 && i < n) ys[i] = parseFloat(v);
      }
      for (const [t, hv] of s.histograms || []) {
        const i = Math.round((t - r.start) / r.step);
        if (i >= 0 && i < n) ys[i] = parseFloat(hv.count);
      }
      return ys;
    });
    let drawn = raw;
    if (stacked) {
      const sum = new Array(n).fill(0);
      drawn = raw.map((ys) => ys.map((v, i) => {
        if (v === null || !isFinite(v)) return null;
        sum[i] += v;
        return sum[i];
      }));
    }
    const width = Math.max(el.clientWidth - 10, 300);
    const opts = {
      width,
      height: 330,
      series: [
        { label: 'time (UTC)', value: (u, v) => (v === null ? '–' : fmtTime(v)) },
        ...shown.map((s, i) => ({
          label: fmtMetric(s.metric),
          stroke: palette[i % palette.length],
          width: 1.5,
          fill: stacked ? palette[i % palette.length] + '55' : undefined,
          spanGaps: false,
          points: { show: false },
          value: (u, v, si, di) => (di === null || di === undefined || raw[si - 1][di] === null ? '–' : fmtNum(raw[si - 1][di])),
        })),
      ],
      axes: [{}, { size: 64, values: (u, ticks) => ticks.map(fmtNum) }],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    };
    if (stacked) {
      // Each series filled down to the one below it.
      opts.bands = shown.slice(1).map((s, i) => ({ series: [i + 2, i + 1], fill: palette[(i + 1) % palette.length] + '55' }));
      opts.series.forEach((s, i) => { if (i > 1) s.fill = undefined; });
    }
    // eslint-disable-next-line no-new
    new uPlot(opts, [xs, ...drawn], el);
    el.dataset.state = 'drawn';
    el.dataset.series = String(shown.length);
    if (data.result.length > shown.length) {
      el.append(h('div', { class: 'warning' }, `${data.result.length} series: the first ${shown.length} are drawn.`));
    }
  }

  // resultTable is an instant query's answer as a table: a row a series
  // (its labels, then its value as the API wrote it).
  function resultTable(data, at) {
    const table = h('table', { id: 'result-table', 'data-time': String(at), 'data-type': data.resultType });
    table.append(h('thead', {}, h('tr', {}, h('th', {}, 'series'), h('th', { class: 'num' }, 'value'))));
    const body = h('tbody');
    table.append(body);
    const row = (metric, value) => body.append(h('tr', {}, h('td', { class: 'mono metric' }, metric), h('td', { class: 'num mono value' }, value)));
    const histText = (hv) => `histogram: count ${hv.count}, sum ${hv.sum}`;
    switch (data.resultType) {
      case 'vector':
        if (!data.result.length) row(h('span', { class: 'muted' }, 'no data'), '');
        for (const s of data.result.slice(0, maxTableRows)) {
          row(fmtMetric(s.metric), s.value ? s.value[1] : histText(s.histogram[1]));
        }
        break;
      case 'matrix':
        if (!data.result.length) row(h('span', { class: 'muted' }, 'no data'), '');
        for (const s of data.result.slice(0, maxTableRows)) {
          const vals = [...(s.values || []).map(([t, v]) => `${v} @${t}`), ...(s.histograms || []).map(([t, hv]) => `${histText(hv)} @${t}`)];
          row(fmtMetric(s.metric), h('span', {}, vals.map((v) => [v, h('br')])));
        }
        break;
      case 'scalar':
      case 'string':
        row(data.resultType, data.result[1]);
        break;
      default:
        row('?', JSON.stringify(data.result));
    }
    if (Array.isArray(data.result) && data.result.length > maxTableRows && data.resultType !== 'scalar' && data.resultType !== 'string') {
      body.append(h('tr', {}, h('td', { colspan: 2, class: 'muted' }, `${data.result.length - maxTableRows} more series not shown`)));
    }
    return table;
  }

  // ---- the cardinality explorer ----

  // narrow adds the matcher name="value" to the selector sel.
  function narrow(sel, name, value) {
    const m = `${name}=${JSON.stringify(value)}`;
    sel = (sel || '').trim();
    if (!sel) return `{${m}}`;
    if (sel.endsWith('}')) {
      const inner = sel.slice(sel.lastIndexOf('{') + 1, -1).trim();
      return sel.slice(0, -1) + (inner ? ', ' : '') + m + '}';
    }
    return `${sel}{${m}}`;
  }

  function cardinalityPage() {
    const q = new URLSearchParams(location.search);
    const today = new Date().toISOString().slice(0, 10);
    const match = h('input', { id: 'match', size: 40, value: q.get('match[]') || '', placeholder: 'series selector: {job="a"}', class: 'mono' });
    const focus = h('input', { id: 'focus', size: 14, value: q.get('focusLabel') || '', placeholder: 'label' });
    const date = h('input', { id: 'date', type: 'date', value: q.get('date') || today });
    const limit = h('input', { id: 'limit', type: 'number', min: 1, max: 10000, value: q.get('limit') || '10', style: 'width:6em' });
    const apply = h('button', { id: 'apply', type: 'button' }, 'Apply');
    const reset = h('button', { type: 'button', class: 'plain' }, 'Reset');
    const out = h('div', { id: 'cardinality' });
    app.append(
      h('div', { class: 'row' }, h('label', {}, 'match[] ', match), h('label', {}, 'focus label ', focus),
        h('label', {}, 'date (UTC) ', date), h('label', {}, 'top ', limit), apply, reset),
      out);

    async function load() {
      const params = { 'match[]': match.value.trim(), focusLabel: focus.value.trim(), date: date.value, limit: limit.value };
      setParams(params);
      out.textContent = '';
      out.dataset.state = 'loading';
      let r;
      try {
        r = await api('api/v1/status/tsdb', params);
      } catch (err) {
        out.append(errorBox(err));
        out.dataset.state = 'error';
        return;
      }
      const d = r.data;
      const total = d.totalSeries || d.headStats.numSeries || 0;
      out.append(...messages(r.warnings, r.infos));
      out.append(h('div', { class: 'row status-line' },
        h('span', {}, 'series ', h('b', { id: 'total-series' }, fmtCount(total))),
        h('span', {}, ' · label=value pairs ', h('b', {}, fmtCount(d.totalLabelValuePairs || d.headStats.numLabelPairs || 0))),
        d.headStats.maxTime ? h('span', {}, ` · days ${fmtTime(d.headStats.minTime / 1000).slice(0, 10)} to ${fmtTime(d.headStats.maxTime / 1000).slice(0, 10)}`) : null,
        match.value.trim() ? h('span', {}, ' · of ', h('code', {}, match.value.trim())) : null));
      const tbl = (id, title, rows, head, onClick, hint) => {
        const max = rows.reduce((a, s) => Math.max(a, s.value), 0) || 1;
        const t = h('table', { id },
          h('thead', {}, h('tr', {}, h('th', {}, head), h('th', { class: 'num' }, 'series'), h('th', { class: 'num' }, '% of all'), h('th', { style: 'width:22%' }, ''))),
          h('tbody', {}, rows.length ? rows.map((s) => h('tr', {},
            h('td', { class: 'mono' }, onClick ? h('a', { class: 'link name', title: hint, onclick: () => onClick(s.name) }, s.name) : h('span', { class: 'name' }, s.name)),
            h('td', { class: 'num count' }, fmtCount(s.value)),
            h('td', { class: 'num' }, total ? (100 * s.value / total).toFixed(1) + '%' : ''),
            h('td', {}, h('div', { class: 'bar', style: `width:${(100 * s.value / max).toFixed(1)}%` })))) :
            h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'none'))));
        return h('div', { class: 'card' }, h('h2', {}, title), t);
      };
      const go = () => load();
      const cards = [
        tbl('by-metric', 'Series by metric name', d.seriesCountByMetricName || [], 'metric',
          (name) => { match.value = narrow(match.value, '__name__', name); go(); }, 'narrow to this metric'),
        tbl('by-label', 'Series by label name', d.seriesCountByLabelName || [], 'label',
          (name) => { focus.value = name; go(); }, 'the series by each value of this label'),
        tbl('by-pair', 'Series by label=value pair', d.seriesCountByLabelValuePair || [], 'label=value',
          (pair) => { const i = pair.indexOf('='); match.value = narrow(match.value, pair.slice(0, i), pair.slice(i + 1)); go(); }, 'narrow to this pair'),
      ];
      const lv = (d.labelValueCountByLabelName || []);
      const lvCard = h('div', { class: 'card' }, h('h2', {}, 'Values by label name'),
        h('table', { id: 'by-values' }, h('thead', {}, h('tr', {}, h('th', {}, 'label'), h('th', { class: 'num' }, 'values'))),
          h('tbody', {}, lv.length ? lv.map((s) => h('tr', {}, h('td', { class: 'mono' }, h('a', { class: 'link name', onclick: () => { focus.value = s.name; go(); } }, s.name)),
            h('td', { class: 'num count' }, fmtCount(s.value)))) : h('tr', {}, h('td', { colspan: 2, class: 'muted' }, 'none')))));
      cards.push(focus.value.trim() ?
        tbl('by-focus', `Series by value of ${focus.value.trim()}`, d.seriesCountByFocusLabelValue || [], 'value',
          (v) => { match.value = narrow(match.value, focus.value.trim(), v); go(); }, 'narrow to this value') : lvCard);
      out.append(h('div', { class: 'cols' }, cards));
      out.dataset.state = 'done';
    }
    apply.addEventListener('click', load);
    reset.addEventListener('click', () => { match.value = ''; focus.value = ''; date.value = today; limit.value = '10'; load(); });
    for (const el of [match, focus, limit]) el.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') load(); });
    date.addEventListener('change', load);
    load();
  }

  // ---- status ----

  // parseMetrics sums each metric family's samples of a /metrics page
  // (Prometheus's text format): name -> {sum, max, n}.
  function parseMetrics(text) {
    const out = {};
    for (const line of text.split('\n')) {
      if (!line || line[0] === '#') continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
      if (!m) continue;
      const v = parseFloat(m[3]);
      const e = out[m[1]] || (out[m[1]] = { sum: 0, max: -Infinity, n: 0 });
      e.sum += v;
      e.max = Math.max(e.max, v);
      e.n++;
    }
    return out;
  }

  function kvTable(id, rows) {
    return h('table', { class: 'kv', id }, h('tbody', {}, rows.filter(Boolean).map(([k, v, key]) =>
      h('tr', {}, h('td', {}, k), h('td', { 'data-key': key || null }, v)))));
  }

  async function statusPage(info) {
    const [metricsR, readyR, buildR] = await Promise.allSettled([fetchText('metrics'), fetchText('-/ready'), api('api/v1/status/buildinfo')]);
    const met = metricsR.status === 'fulfilled' && metricsR.value.status === 200 ? parseMetrics(metricsR.value.text) : {};
    const has = (n) => met[n] !== undefined;
    const sum = (n) => (has(n) ? met[n].sum : NaN);
    const max = (n) => (has(n) ? met[n].max : NaN);
    const opt = (n, f) => (has(n) ? f(n) : null);
    const build = buildR.status === 'fulfilled' ? buildR.value.data : {};
    const ready = readyR.status === 'fulfilled' ? readyR.value : { status: 0, text: readyR.reason.message };
    const readOnly = sum('promhbase_storage_read_only');
    const hbase = info.backend.startsWith('hbase');
    const tsOrNever = (v) => (isFinite(v) && v > 0 ? fmtTime(v) : 'none');
    const cards = [
      h('div', { class: 'card' }, h('h2', {}, 'Build'), kvTable('build', [
        ['version', build.version || info.version, 'version'],
        ['revision', build.revision || '–'],
        ['branch', build.branch || '–'],
        ['build date', build.buildDate || '–'],
        ['Go version', build.goVersion || info.goVersion],
      ])),
      h('div', { class: 'card' }, h('h2', {}, 'Runtime'), kvTable('runtime', [
        ['started', fmtTime(Date.parse(info.started) / 1000)],
        ['uptime', fmtDuration(info.uptimeSeconds), 'uptime'],
        ['goroutines', fmtCount(info.goroutines), 'goroutines'],
        ['GOMAXPROCS', String(info.gomaxprocs), 'gomaxprocs'],
        ['Go memory (from the OS)', fmtBytes(info.memoryBytes), 'memory'],
        ['heap objects', fmtBytes(info.heapBytes), 'heap'],
        opt('process_resident_memory_bytes', (n) => ['resident memory', fmtBytes(sum(n)), 'rss']),
        ['GC cycles', fmtCount(info.gcCycles)],
      ])),
      h('div', { class: 'card' }, h('h2', {}, 'Readiness'), kvTable('readiness', [
        ['/-/ready', h('span', {}, badge(ready.status === 200 ? 'ready' : 'not ready', ready.status === 200 ? 'ok' : 'err'), ' ', ready.text.trim()), 'ready'],
        ['read-only', isFinite(readOnly) ? badge(readOnly > 0 ? 'read-only' : 'writable', readOnly > 0 ? 'err' : 'ok') : 'not reported', 'read-only'],
        hbase ? ['HBase connection', badge(ready.status === 200 ? 'connected' : 'not reached', ready.status === 200 ? 'ok' : 'err'), 'hbase'] : null,
        opt('promhbase_hbase_retries_total', (n) => ['HBase retries', fmtCount(sum(n))]),
        opt('promhbase_hbase_failures_total', (n) => ['HBase failures', fmtCount(sum(n))]),
        info.tenants ? ['tenants', 'on: each request names its tenant (X-Scope-OrgID) or its login does'] : null,
      ])),
      h('div', { class: 'card' }, h('h2', {}, 'Store'), kvTable('store', [
        ['backend', info.backend, 'backend'],
        opt('promhbase_store_table_bytes', (n) => ['data size (tables on disk)', fmtBytes(sum(n)), 'data-bytes']),
        opt('promhbase_store_log_bytes', (n) => ['write-ahead logs', fmtBytes(sum(n))]),
        opt('promhbase_embedded_free_disk_bytes', (n) => ['free disk space', fmtBytes(max(n)), 'free-bytes']),
        opt('promhbase_embedded_row_buffer_bytes', (n) => ['row buffer', `${fmtBytes(sum(n))}, ${fmtCount(sum('promhbase_embedded_row_buffer_rows'))} rows, ${fmtCount(sum('promhbase_embedded_row_buffer_cells'))} cells`, 'row-buffer']),
        opt('promhbase_embedded_row_buffer_flushes_total', (n) => ['row buffer flushes', `${fmtCount(sum(n))} (${fmtCount(sum('promhbase_embedded_row_buffer_flush_errors_total') || 0)} failed)`]),
        opt('promhbase_embedded_memtable_bytes', (n) => ['memtables', fmtBytes(sum(n))]),
        opt('promhbase_oldest_sample_timestamp_seconds', (n) => ['oldest sample', tsOrNever(max(n))]),
      ])),
      h('div', { class: 'card' }, h('h2', {}, 'Tables'), kvTable('tables', [
        ['data', info.dataTable], ['UID', info.uidTable], ['exemplars', info.exemplarTable || '(not kept)'],
        ['series index', info.indexTable ? (info.metaTable ? info.metaTable + ', ' : '') + info.indexTable : '(not kept)'],
        ['salt', info.saltWidth ? `${info.saltWidth} byte(s), ${info.saltBuckets} buckets` : 'none'],
        ['UID widths (metric, tagk, tagv)', info.uidWidths.join(', ')],
      ])),
      h('div', { class: 'card' }, h('h2', {}, 'Background work'), kvTable('background', [
        opt('promhbase_compaction_pending_rows', (n) => ['compaction: rows pending', fmtCount(sum(n)), 'compaction-pending']),
        opt('promhbase_compaction_rows_compacted_total', (n) => ['compaction: rows compacted', `${fmtCount(sum(n))} (${fmtCount(sum('promhbase_compaction_errors_total') || 0)} errors)`]),
        opt('promhbase_rollup_built_until_timestamp_seconds', (n) => ['rollups built', `${tsOrNever(max('promhbase_rollup_built_from_timestamp_seconds'))} to ${tsOrNever(max(n))}`, 'rollup']),
        opt('promhbase_rollup_hours_stale', (n) => ['rollups: hours stale', fmtCount(sum(n))]),
        opt('promhbase_rollup_failures_total', (n) => ['rollups: failures', fmtCount(sum(n))]),
        opt('promhbase_retention_cutoff_timestamp_seconds', (n) => ['retention: deleted before', tsOrNever(max(n)), 'retention']),
        opt('promhbase_retention_cycles_total', (n) => ['retention: cycles', `${fmtCount(sum(n))} (${fmtCount(sum('promhbase_retention_cycle_failures_total') || 0)} failed, the last took ${fmtDuration(max('promhbase_retention_last_cycle_duration_seconds'))})`]),
      ])),
    ];
    app.append(h('div', { class: 'cols3', id: 'status' }, cards),
      h('p', { class: 'small muted' }, 'From ', h('a', { href: 'ui/info.json', class: 'link' }, 'ui/info.json'), ', ',
        h('a', { href: 'metrics', class: 'link' }, '/metrics'), ', ', h('a', { href: '-/ready', class: 'link' }, '/-/ready'),
        ' and ', h('a', { href: 'api/v1/status/buildinfo', class: 'link' }, 'buildinfo'), '. Endpoints and configuration snippets: ',
        h('a', { href: 'setup', class: 'link' }, 'setup'), info.pprof ? [', ', h('a', { href: 'debug/pprof/', class: 'link' }, 'pprof')] : null, '.'));
    if (metricsR.status === 'rejected') app.append(errorBox(metricsR.reason));
  }

  function flagsPage(info) {
    const filter = h('input', { class: 'filter', placeholder: 'filter', 'aria-label': 'filter' });
    const body = h('tbody');
    const names = Object.keys(info.flags || {}).sort();
    const render = () => {
      const f = filter.value.toLowerCase();
      body.textContent = '';
      body.append(...names.filter((n) => !f || n.includes(f) || String(info.flags[n]).toLowerCase().includes(f))
        .map((n) => h('tr', {}, h('td', { class: 'mono' }, '--' + n), h('td', { class: 'mono' }, info.flags[n]))));
    };
    filter.addEventListener('input', render);
    render();
    app.append(h('div', { class: 'row' }, filter, h('span', { class: 'muted' }, `${names.length} flags`)),
      h('table', { id: 'flags' }, h('thead', {}, h('tr', {}, h('th', {}, 'flag'), h('th', {}, 'value'))), body));
  }

  // ---- rules and alerts ----

  async function rulesPage() {
    let r;
    try {
      r = await api('api/v1/rules');
    } catch (err) {
      app.append(errorBox(err));
      return;
    }
    const groups = r.data.groups || [];
    const filter = h('input', { class: 'filter', placeholder: 'filter by name or expression', 'aria-label': 'filter' });
    const out = h('div', { id: 'rules' });
    const render = () => {
      const f = filter.value.toLowerCase();
      out.textContent = '';
      if (!groups.length) out.append(h('p', { class: 'muted' }, 'No rule groups (the ruler is off, or none are configured for this tenant: /config/v1/rules).'));
      for (const g of groups) {
        const rules = g.rules.filter((x) => !f || x.name.toLowerCase().includes(f) || x.query.toLowerCase().includes(f));
        if (f && !rules.length) continue;
        out.append(h('div', { class: 'card', style: 'margin-bottom:10px' },
          h('h2', {}, g.name, ' ', h('span', { class: 'muted small' }, `${g.file} · every ${fmtDuration(g.interval)} · evaluated ${fmtAgo(g.lastEvaluation)} in ${fmtDuration(g.evaluationTime)}`)),
          h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'rule'), h('th', {}, 'health'), h('th', {}, 'last evaluation'), h('th', { class: 'num' }, 'took'))),
            h('tbody', {}, rules.map((x) => h('tr', {},
              h('td', {},
                h('div', { class: 'mono' }, h('b', {}, x.type === 'alerting' ? 'alert: ' : 'record: ', x.name)),
                h('div', { class: 'mono small' }, x.query),
                x.duration ? h('div', { class: 'small muted' }, `for ${fmtDuration(x.duration)}`) : null,
                Object.keys(x.labels || {}).length ? labelsList(x.labels) : null,
                x.lastError ? h('div', { class: 'error small' }, x.lastError) : null),
              h('td', { class: 'health' }, badge(x.health, x.health === 'ok' ? 'ok' : x.health === 'err' ? 'err' : 'unknown')),
              h('td', { class: 'small' }, fmtAgo(x.lastEvaluation)),
              h('td', { class: 'num small' }, fmtDuration(x.evaluationTime))))))));
      }
    };
    filter.addEventListener('input', render);
    app.append(h('div', { class: 'row' }, filter, h('span', { class: 'muted' }, `${groups.length} groups, ${groups.reduce((a, g) => a + g.rules.length, 0)} rules`)), out);
    render();
  }

  async function alertsPage() {
    let r;
    try {
      r = await api('api/v1/rules', { type: 'alert' });
    } catch (err) {
      app.append(errorBox(err));
      return;
    }
    const rules = (r.data.groups || []).flatMap((g) => g.rules.filter((x) => x.type === 'alerting').map((x) => ({ ...x, group: g.name })));
    const counts = { firing: 0, pending: 0, inactive: 0 };
    rules.forEach((x) => { counts[x.state] = (counts[x.state] || 0) + 1; });
    const shown = { firing: true, pending: true, inactive: true };
    const out = h('div', { id: 'alerts' });
    const boxes = Object.keys(shown).map((s) => h('label', {}, h('input', { type: 'checkbox', checked: true, onchange: (ev) => { shown[s] = ev.target.checked; render(); } }),
      ' ', badge(`${s} (${counts[s]})`, s)));
    const order = { firing: 0, pending: 1, inactive: 2 };
    function render() {
      out.textContent = '';
      if (!rules.length) out.append(h('p', { class: 'muted' }, 'No alerting rules (the ruler is off, or none are configured for this tenant).'));
      const list = rules.filter((x) => shown[x.state]).sort((a, b) => order[a.state] - order[b.state] || a.name.localeCompare(b.name));
      const body = h('tbody');
      for (const x of list) {
        const alerts = x.alerts || [];
        body.append(h('tr', { class: 'rule', 'data-state': x.state },
          h('td', { rowspan: Math.max(alerts.length, 1) }, h('b', { class: 'mono name' }, x.name), h('div', { class: 'small muted' }, x.group),
            h('div', { class: 'mono small' }, x.query), x.duration ? h('div', { class: 'small muted' }, `for ${fmtDuration(x.duration)}`) : null,
            x.lastError ? h('div', { class: 'error small' }, x.lastError) : null),
          alerts.length ? alertCells(alerts[0]) : [h('td', {}, badge(x.state)), h('td', { colspan: 3, class: 'muted small' }, 'no alerts')]));
        for (const a of alerts.slice(1)) body.append(h('tr', { class: 'alert' }, alertCells(a)));
      }
      out.append(h('table', { id: 'alerts-table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'alerting rule'), h('th', {}, 'state'), h('th', {}, 'labels'), h('th', {}, 'active since'), h('th', { class: 'num' }, 'value'))), body));
    }
    function alertCells(a) {
      return [h('td', { class: 'state' }, badge(a.state)), h('td', {}, labelsList(a.labels),
        Object.keys(a.annotations || {}).length ? h('div', { class: 'small muted' }, Object.entries(a.annotations).map(([k, v]) => `${k}: ${v}`).join(' · ')) : null),
      h('td', { class: 'small' }, a.activeAt ? `${fmtTime(Date.parse(a.activeAt) / 1000)} (${fmtAgo(a.activeAt)})` : '–'),
      h('td', { class: 'num mono' }, a.value)];
    }
    app.append(h('div', { class: 'row' }, boxes), out);
    render();
  }

  // ---- start ----

  async function main() {
    let info;
    try {
      info = await loadInfo();
    } catch (err) {
      app.append(errorBox(err));
      return;
    }
    setupTenant(info);
    switch (page) {
      case 'graph': queryPage(); break;
      case 'tsdb-status': cardinalityPage(); break;
      case 'status': await statusPage(info); break;
      case 'flags': flagsPage(info); break;
      case 'rules': await rulesPage(); break;
      case 'alerts': await alertsPage(); break;
      default: app.append(errorBox(new Error('no such page: ' + page)));
    }
    document.body.dataset.ready = '1';
  }
  main();
}());
