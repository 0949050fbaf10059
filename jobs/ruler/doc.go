// Package ruler evaluates recording and alerting rules over promhbase's
// data, as Mimir's ruler does: rule groups in Prometheus's rule-file format
// kept per tenant in the store (so that every replica sees the same rules),
// Mimir's ruler configuration API over them, Prometheus's rules and
// notifier packages evaluating them, recording rules' results written
// through the write path, alerts sent to Alertmanager, and one replica at a
// time evaluating each group (a lease per group in the rules table).
//
// The rules table (mapping.DefaultRulesTable, "tsdb-rules", family "r",
// one in each tenant's namespace) holds two kinds of rows:
//
//	'g' namespace 0x00 group   r:group  the group as Prometheus's rule-file
//	                                    YAML (one rulefmt.RuleGroup)
//	'l' namespace 0x00 group   r:lease  u64 big-endian expiry (Unix ms),
//	                                    then the holder's token
//	                           r:last   u64 big-endian: the timestamp (Unix
//	                                    ms) of the group's last completed
//	                                    evaluation
//	'm' token                  r:lease  u64 big-endian expiry (Unix ms),
//	                                    then the token: a replica of the
//	                                    ruler, live until its expiry (the
//	                                    replicas count them to take their
//	                                    share of the groups)
//
// A rule namespace (Mimir's word: a rule file) and a group name are any
// UTF-8 text without a 0x00 byte.
//
// The configuration API (YAML, as Mimir's) validates groups and applies
// each tenant's limits; rules query through the tenant's engine; `promhbase
// rules backfill` evaluates the recording rules over past ranges.
package ruler
