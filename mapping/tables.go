package mapping

// The default names of the tables: OpenTSDB's (its
// tsd.storage.hbase.*_table settings' defaults) and promhbase's own. The
// Options of the packages that name a table use them when left empty, and
// cmd/promhbase's --hbase.table.* flags default to them.
const (
	DefaultDataTable     = "tsdb"          // OpenTSDB's data table (family t)
	DefaultUIDTable      = "tsdb-uid"      // OpenTSDB's UID table (families id and name)
	DefaultMetaTable     = "tsdb-meta"     // OpenTSDB's meta table: TSMeta rows (family name)
	DefaultExemplarTable = "tsdb-exemplar" // promhbase's exemplars (family e)
	DefaultIndexTable    = "tsdb-index"    // promhbase's series index by day (family i)
	DefaultHATable       = "tsdb-ha"       // promhbase's HA pair elections (family h)
	DefaultRulesTable    = "tsdb-rules"    // promhbase's rule groups and their leases (family r, package ruler)
)
