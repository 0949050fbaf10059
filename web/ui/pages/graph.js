// promhbase's web UI: the graph page (app.js holds what every page
// shares and starts the page the body's data-page names).
'use strict';
(function ({ app, h, api, errorBox, messages, fmtTime, fmtNum, fmtMetric, parseDuration, parseTime, setParams, pages }) {

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


  pages['graph'] = queryPage;
}(window.promhbase));
