// promhbase's web UI: the status page (app.js holds what every page
// shares and starts the page the body's data-page names).
'use strict';
(function ({ app, h, tenant, api, fetchText, errorBox, fmtTime, fmtDuration, fmtBytes, fmtCount, badge, pages }) {

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

  pages['status'] = statusPage;
}(window.promhbase));
