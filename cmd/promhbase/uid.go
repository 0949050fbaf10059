package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/uid"
)

type uidCmd struct {
	get, name, assign, fsck *kingpin.CmdClause
	kind                    string
	args                    []string
}

func registerUID(app *kingpin.Application, cfg *config) *uidCmd {
	u := &uidCmd{}
	cmd := app.Command("uid", "Look up and assign UIDs in the UID table, like OpenTSDB's `tsdb uid`.")
	u.get = cmd.Command("grep", "Print the UIDs of names (no assignment).").Alias("get")
	u.name = cmd.Command("name", "Print the names of UIDs given in hex.")
	u.assign = cmd.Command("assign", "Assign UIDs to names that have none (like `tsdb mkmetric`), print them.")
	u.fsck = cmd.Command("fsck", "Check the UID table like `tsdb uid fsck`: forward and reverse mappings agree, no UID is used twice, counters are ahead.")
	for _, c := range []*kingpin.CmdClause{u.get, u.name, u.assign} {
		c.Arg("kind", "metrics, tagk or tagv.").Required().EnumVar(&u.kind, "metrics", "metric", "tagk", "tagv")
		c.Arg("values", "Names (or hex UIDs for `name`).").Required().StringsVar(&u.args)
	}
	return u
}

func (u *uidCmd) run(cmd string, cfg *config) error {
	if cmd == u.fsck.FullCommand() {
		return runUIDFsck(cfg)
	}
	kind, err := uid.ParseKind(u.kind)
	if err != nil {
		return err
	}
	st, mapper, err := cfg.openMapping(prometheus.NewRegistry(), cfg.logger())
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, cancel := cmdContext()
	defer cancel()
	uids := mapper.UIDs()
	failed := 0
	for _, a := range u.args {
		switch cmd {
		case u.get.FullCommand():
			id, err := uids.ID(ctx, kind, a)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				failed++
				continue
			}
			fmt.Printf("%s %s: %X\n", kind, a, id)
		case u.assign.FullCommand():
			id, err := uids.GetOrCreate(ctx, kind, []byte(a))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				failed++
				continue
			}
			fmt.Printf("%s %s: %X\n", kind, a, id)
		case u.name.FullCommand():
			id, err := hex.DecodeString(strings.TrimPrefix(a, "0x"))
			if err != nil {
				fmt.Fprintf(os.Stderr, "uid %q is not hex: %v\n", a, err)
				failed++
				continue
			}
			n, err := uids.Name(ctx, kind, id)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				failed++
				continue
			}
			fmt.Printf("%s %X: %s\n", kind, id, n)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d failed", failed, len(u.args))
	}
	return nil
}

func runUIDFsck(cfg *config) error {
	st, err := cfg.openStore(prometheus.NewRegistry(), cfg.logger())
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, cancel := cmdContext()
	defer cancel()
	rep, err := uid.UIDFsck(ctx, st, cfg.uidTable, cfg.layout)
	if err != nil {
		return err
	}
	fmt.Printf("forward mappings: metrics %d, tagk %d, tagv %d\n", rep.Forward[uid.KindMetric], rep.Forward[uid.KindTagK], rep.Forward[uid.KindTagV])
	for _, o := range rep.Orphans {
		fmt.Println("orphan (harmless):", o)
	}
	for _, e := range rep.Errors {
		fmt.Println("error:", e)
	}
	fmt.Printf("%d errors, %d orphans\n", len(rep.Errors), len(rep.Orphans))
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d errors in %s", len(rep.Errors), cfg.uidTable)
	}
	return nil
}
