// promhbase's web UI: what every page shares (helpers, the tenant picker,
// the start); each page's own script is pages/<page>.js, loaded after this
// one, which registers its page in promhbase.pages. Plain DOM, no
// framework and no build step (docs/ui.md). Every
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

  // ---- what the pages' scripts use ----

  const pages = {};
  window.promhbase = {
    app, h, tenant, api, fetchText, errorBox, messages, fmtTime, fmtAgo, fmtDuration, fmtBytes, fmtNum,
    fmtCount, fmtMetric, parseDuration, parseTime, labelsList, badge, setParams, narrow, pages,
  };

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
    const run = pages[page];
    if (!run) {
      app.append(errorBox(new Error('no such page: ' + page)));
      return;
    }
    await run(info);
    document.body.dataset.ready = '1';
  }
  // The pages' scripts are deferred too: they have all run (and
  // registered their pages) when the document is parsed.
  document.addEventListener('DOMContentLoaded', main);
}());
