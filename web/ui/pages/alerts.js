// promhbase's web UI: the alerts page (app.js holds what every page
// shares and starts the page the body's data-page names).
'use strict';
(function ({ app, h, tenant, api, errorBox, fmtTime, fmtAgo, fmtDuration, labelsList, badge, pages }) {
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

  pages['alerts'] = alertsPage;
}(window.promhbase));
