// promhbase's web UI: the rules page (app.js holds what every page
// shares and starts the page the body's data-page names).
'use strict';
(function ({ app, h, tenant, api, errorBox, fmtAgo, fmtDuration, labelsList, badge, pages }) {

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

  pages['rules'] = rulesPage;
}(window.promhbase));
