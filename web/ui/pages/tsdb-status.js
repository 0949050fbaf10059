// promhbase's web UI: the tsdb-status page (app.js holds what every page
// shares and starts the page the body's data-page names).
'use strict';
(function ({ app, h, api, errorBox, messages, fmtTime, fmtCount, setParams, narrow, pages }) {
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

  pages['tsdb-status'] = cardinalityPage;
}(window.promhbase));
