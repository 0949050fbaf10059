package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/hbase"
)

// tenantFlags are serve's flags of tenants and the runtime
// configuration.
type tenantFlags struct {
	enabled      bool
	federation   bool
	maxFederated int
	autoCreate   bool
	runtimeFile  string
	reloadPeriod time.Duration
}

func registerTenantFlags(cmd *kingpin.CmdClause, f *tenantFlags) {
	cmd.Flag("auth.multitenancy-enabled", "Serve several tenants, as Mimir's flag of this name: every request but health, readiness, /metrics and pprof names its tenant in the X-Scope-OrgID header (none: 401; an invalid ID: 400), or by its basic-auth login (--web.config.file; --runtime-config.file's users map logins to tenants, a login not mapped is its own tenant). Each tenant's tables are those of the --hbase.table.* flags in the HBase namespace t_<ID> (docs/tenants.md); off, one implicit tenant uses the tables themselves.").Default("false").BoolVar(&f.enabled)
	cmd.Flag("tenant-federation.enabled", "Let a read name several tenants, X-Scope-OrgID: a|b, as Mimir's flag of this name: the query API reads all of them and adds __tenant_id__ to every series. Writes always name one tenant.").Default("false").BoolVar(&f.federation)
	cmd.Flag("tenant-federation.max-tenants", "Most tenants one federated read may name (then 400), as Mimir's flag of this name. 0 means no limit.").Default("0").IntVar(&f.maxFederated)
	cmd.Flag("tenant.create-on-first-write", "Create a tenant's namespace and tables at its first write. Off, tenants are created with `promhbase create-tables --tenant ID` and a write of a tenant not created gets 400; reads of it answer as of a tenant with no data.").Default("false").BoolVar(&f.autoCreate)
	cmd.Flag("runtime-config.file", "Runtime configuration (YAML), as Mimir's: per-tenant limits (overrides: <tenant>: the --limits.* and --query.* limits by their snake_case or Mimir's names, metric_relabel_configs, blocked_queries, retention_period and retention_stream, the ruler's and OTLP's settings; docs/tenants.md), and the tenants of each basic-auth login (users: <login>: [tenants]). Read again every --runtime-config.reload-period; a change applies without a restart, a file that does not load keeps the last one in force. Without --auth.multitenancy-enabled the overrides of tenant anonymous apply. GET /runtime_config shows it.").Default("").StringVar(&f.runtimeFile)
	cmd.Flag("runtime-config.reload-period", "How often --runtime-config.file is read again.").Default("10s").DurationVar(&f.reloadPeriod)
}

// provisioner returns the function that creates a tenant's namespace
// and tables in st: HBase's namespace and the tables create-tables
// makes, or the embedded store's namespace.
func (c *config) provisioner(st store.Store, logger *slog.Logger) (func(ctx context.Context, ns string) error, error) {
	switch s := st.(type) {
	case *embedded.Store:
		return func(ctx context.Context, ns string) error {
			_, err := s.CreateNamespace(ctx, ns)
			return err
		}, nil
	case *hbase.Store:
		return func(ctx context.Context, ns string) error {
			tc, err := c.tablesConfig(ns)
			if err != nil {
				return err
			}
			rep, err := s.CreateTables(ctx, tc)
			if len(rep.Created) > 0 {
				logger.Info("tables created", "namespace", ns, "tables", strings.Join(rep.Created, ","))
			}
			return compressionHint(err, tc.Compression)
		}, nil
	}
	return nil, fmt.Errorf("the %s store cannot create tenants", c.backend)
}

// tablesConfig is what create-tables creates, in namespace ns (empty:
// the default namespace).
func (c *config) tablesConfig(ns string) (hbase.TablesConfig, error) {
	rollupTables, _, err := c.rollupTables()
	if err != nil {
		return hbase.TablesConfig{}, err
	}
	compression := c.hbase.compression
	if compression == "" {
		compression = defaultCompression
	}
	return hbase.TablesConfig{
		Namespace: ns,
		DataTable: c.dataTable, UIDTable: c.uidTable, ExemplarTable: c.exemplarTable,
		MetaTable: c.metaTable, IndexTable: c.indexTable, HATable: c.haTable, RulesTable: c.rulesTable, RollupTables: rollupTables,
		Compression: compression, DataTTL: c.hbase.dataTTL,
		SaltWidth: c.layout.SaltWidth, SaltBuckets: c.layout.SaltBuckets,
	}, nil
}

// basicAuthUsers reports whether the web configuration file checks
// basic-auth logins (basic_auth_users), so that a request's login can be
// trusted to name its tenant.
func basicAuthUsers(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("--web.config.file=%s: %w", path, err)
	}
	var wc struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(b, &wc); err != nil {
		return false, fmt.Errorf("--web.config.file=%s: %w", path, err)
	}
	return len(wc.Users) > 0, nil
}

// newTenants wires the multi-tenant server over st from base, every
// tenant's server configuration.
func (c *config) newTenants(st store.Store, base server.Config, f tenantFlags, reg *prometheus.Registry, logger *slog.Logger) (*server.Tenants, error) {
	rt, err := newRuntime(base, f, reg, logger)
	if err != nil {
		return nil, err
	}
	auth, err := basicAuthUsers(serveOpts.webConfigFile)
	if err != nil {
		return nil, err
	}
	tc := server.TenantsConfig{Federation: f.federation, MaxFederated: f.maxFederated, AutoCreate: f.autoCreate, Runtime: rt, BasicAuth: auth, Gatherer: reg,
		NewMapper: func(view store.Store, r prometheus.Registerer) (*series.Mapper, error) {
			return c.newMapper(view, r, logger)
		}}
	if f.autoCreate {
		if tc.Provision, err = c.provisioner(st, logger); err != nil {
			return nil, err
		}
	}
	return server.NewTenants(st, base, tc)
}

// createTenants creates the namespaces and tables of the tenants ids.
func (c *config) createTenantTables(ids []string) error {
	for _, id := range ids {
		if err := tenant.ValidateID(id); err != nil {
			return fmt.Errorf("--tenant=%q: %w", id, err)
		}
	}
	j, err := c.openAdminJob(5 * time.Minute)
	if err != nil {
		return err
	}
	defer j.close()
	ctx, st := j.ctx, j.st
	for _, id := range ids {
		ns := tenant.Namespace(id)
		switch s := st.(type) {
		case *embedded.Store:
			created, err := s.CreateNamespace(ctx, ns)
			if err != nil {
				return fmt.Errorf("tenant %q: %w", id, err)
			}
			fmt.Printf("tenant %s (namespace %s): %s\n", id, ns, map[bool]string{true: "created", false: "already there, left alone"}[created])
		case *hbase.Store:
			tc, err := c.tablesConfig(ns)
			if err != nil {
				return err
			}
			rep, err := s.CreateTables(ctx, tc)
			fmt.Printf("tenant %s (namespace %s):", id, ns)
			if len(rep.Created) > 0 {
				fmt.Printf(" created: %s;", strings.Join(rep.Created, ", "))
			}
			if len(rep.Existed) > 0 {
				fmt.Printf(" already there, left alone: %s;", strings.Join(rep.Existed, ", "))
			}
			fmt.Println()
			if err != nil {
				return fmt.Errorf("tenant %q: %w", id, compressionHint(err, tc.Compression))
			}
		}
	}
	return nil
}

// tenantsCmd is `promhbase tenants`.
type tenantsCmd struct {
	cmd *kingpin.CmdClause
}

func registerTenants(app *kingpin.Application) *tenantsCmd {
	t := &tenantsCmd{}
	t.cmd = app.Command("tenants", "List the tenants (--auth.multitenancy-enabled): each tenant's ID and HBase namespace, one per line, sorted. On HBase a tenant is a namespace t_... that holds the data and UID tables.")
	return t
}

func (t *tenantsCmd) run(c *config) error {
	j, err := c.openAdminJob(time.Minute)
	if err != nil {
		return err
	}
	defer j.close()
	nss, err := tenantNamespaces(j.ctx, j.st, c.dataTable, c.uidTable)
	if err != nil {
		return err
	}
	var lines []string
	for _, ns := range nss {
		id, err := tenant.IDFromNamespace(ns)
		if err != nil {
			continue // a namespace of someone else's
		}
		lines = append(lines, id+"\t"+ns)
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	return nil
}

// errNoTenants is the error of a store without namespaces.
var errNoTenants = errors.New("this store has no tenants")

// tenantNamespaces returns the namespaces of st that hold every one of
// tables (on the embedded store, every namespace: its tables are
// everywhere), or errNoTenants.
func tenantNamespaces(ctx context.Context, st store.Store, tables ...string) ([]string, error) {
	switch s := st.(type) {
	case *embedded.Store:
		return s.Namespaces(), nil
	case *hbase.Store:
		m, err := s.ListNamespaceTables(ctx, tenant.NamespacePrefix)
		if err != nil {
			return nil, err
		}
		var nss []string
		for ns, have := range m {
			if holdsAll(have, tables) {
				nss = append(nss, ns)
			}
		}
		return nss, nil
	default:
		return nil, errNoTenants
	}
}

// holdsAll says whether have holds every one of tables.
func holdsAll(have, tables []string) bool {
	for _, t := range tables {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}

// newRuntime reads the runtime configuration (--runtime-config.file),
// its defaults the flags' (base, every tenant's server configuration).
func newRuntime(base server.Config, f tenantFlags, reg prometheus.Registerer, logger *slog.Logger) (*overrides.Runtime, error) {
	defaults := overrides.FromConfig(base.Limits, base.Query.MaxSamples)
	defaults.RulerMaxRuleGroupsPerTenant = serveOpts.rulerLimits.maxGroups
	defaults.RulerMaxRulesPerRuleGroup = serveOpts.rulerLimits.maxRules
	defaults.Query = queryLimitsOf(base.API.Guards)
	if base.Adapter.OTLP != nil {
		defaults.OTel = overrides.OTelLimitsOf(base.Adapter.OTLP())
	}
	return overrides.New(overrides.Options{Path: f.runtimeFile, Period: f.reloadPeriod,
		Defaults: defaults, Registerer: reg, Logger: logger.With("component", "runtime-config")})
}

// singleTenant is the tenant whose overrides of --runtime-config.file a
// server without tenants takes: Mimir's -auth.no-auth-tenant.
const singleTenant = "anonymous"

// withRuntime has srv, a server without tenants, follow the overrides of
// singleTenant in the runtime configuration (--runtime-config.file;
// none: h itself): applied now and at every change, the file read again
// every period until stop; /runtime_config shows it. It returns the
// handler to serve and what stops the reloads.
func withRuntime(h http.Handler, srv *server.Server, base server.Config, f tenantFlags, reg prometheus.Registerer, logger *slog.Logger) (http.Handler, func(), error) {
	if f.runtimeFile == "" {
		return h, func() {}, nil
	}
	rt, err := newRuntime(base, f, reg, logger)
	if err != nil {
		return nil, nil, err
	}
	apply := func() {
		if err := srv.ApplyOverrides(rt.Limits(singleTenant)); err != nil {
			logger.Error("runtime configuration not applied", "tenant", singleTenant, "err", err)
		}
	}
	apply()
	rt.OnChange(apply)
	ctx, cancel := context.WithCancel(context.Background())
	var reloads sync.WaitGroup
	reloads.Go(func() { rt.Run(ctx) })
	mux := http.NewServeMux()
	mux.Handle("GET "+server.RuntimeConfigPath, rt.Handler())
	mux.Handle("/", h)
	return mux, func() { cancel(); reloads.Wait() }, nil
}
