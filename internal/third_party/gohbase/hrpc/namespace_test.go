// Copyright (C) 2026  The GoHBase Authors.  All rights reserved.
// This file is part of GoHBase.
// Use of this source code is governed by the Apache License 2.0
// that can be found in the COPYING file.

package hrpc

import (
	"context"
	"testing"

	"github.com/tsuna/gohbase/pb"
)

// TestAdminTableNamespace checks that the table admin calls send
// "ns:qualifier" as table qualifier in namespace ns, and a name without a
// colon as a table of the default namespace.
func TestAdminTableNamespace(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		table, namespace, qualifier string
	}{
		{"t1", "default", "t1"},
		{"ns1:t1", "ns1", "t1"},
		{"default:t1", "default", "t1"},
	} {
		table := []byte(c.table)
		create := NewCreateTable(ctx, table, map[string]map[string]string{"cf": nil})
		names := map[string]*pb.TableName{
			"CreateTable": create.ToProto().(*pb.CreateTableRequest).
				GetTableSchema().GetTableName(),
			"DeleteTable": NewDeleteTable(ctx, table).ToProto().(*pb.DeleteTableRequest).
				GetTableName(),
			"DisableTable": NewDisableTable(ctx, table).ToProto().(*pb.DisableTableRequest).
				GetTableName(),
			"EnableTable": NewEnableTable(ctx, table).ToProto().(*pb.EnableTableRequest).
				GetTableName(),
		}
		for call, tn := range names {
			ns, q := string(tn.GetNamespace()), string(tn.GetQualifier())
			if ns != c.namespace || q != c.qualifier {
				t.Errorf("%s(%q): namespace %q qualifier %q, want %q %q", call, c.table,
					ns, q, c.namespace, c.qualifier)
			}
		}
	}
}
