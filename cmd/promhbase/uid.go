package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/series/uid"
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
	j, err := cfg.openMappingJob(cmdTimeout)
	if err != nil {
		return err
	}
	defer j.close()
	failed := 0
	for _, a := range u.args {
		line, err := u.one(j.ctx, cmd, j.mapper.UIDs(), kind, a)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed++
			continue
		}
		fmt.Println(line)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d failed", failed, len(u.args))
	}
	return nil
}

// one runs the subcommand cmd (grep, assign or name) on one argument a,
// and returns the line it prints.
func (u *uidCmd) one(ctx context.Context, cmd string, uids *uid.UIDs, kind uid.Kind, a string) (string, error) {
	switch cmd {
	case u.get.FullCommand():
		id, err := uids.ID(ctx, kind, a)
		return fmt.Sprintf("%s %s: %X", kind, a, id), err
	case u.assign.FullCommand():
		id, err := uids.GetOrCreate(ctx, kind, []byte(a))
		return fmt.Sprintf("%s %s: %X", kind, a, id), err
	}
	id, err := hex.DecodeString(strings.TrimPrefix(a, "0x"))
	if err != nil {
		return "", fmt.Errorf("uid %q is not hex: %w", a, err)
	}
	n, err := uids.Name(ctx, kind, id)
	return fmt.Sprintf("%s %X: %s", kind, id, n), err
}

func runUIDFsck(cfg *config) error {
	j, err := cfg.openJob(cmdTimeout)
	if err != nil {
		return err
	}
	defer j.close()
	rep, err := uid.UIDFsck(j.ctx, j.st, cfg.uidTable, cfg.layout)
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
