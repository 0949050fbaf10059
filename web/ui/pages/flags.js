// promhbase's web UI: the flags page (app.js holds what every page
// shares and starts the page the body's data-page names).
'use strict';
(function ({ app, h, pages }) {
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

  pages['flags'] = flagsPage;
}(window.promhbase));
