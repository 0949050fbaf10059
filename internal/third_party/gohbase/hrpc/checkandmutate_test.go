// Copyright (C) 2026  The GoHBase Authors.  All rights reserved.
// This file is part of GoHBase.
// Use of this source code is governed by the Apache License 2.0
// that can be found in the COPYING file.

package hrpc

import (
	"bytes"
	"context"
	"testing"

	"github.com/tsuna/gohbase/filter"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"
)

func assertColumnCondition(
	t *testing.T,
	cond *pb.Condition,
	key []byte,
	cf, qualifier string,
	compareType pb.CompareType,
) {
	t.Helper()

	if cond == nil {
		t.Fatal("expected Condition to be set")
	}
	if !bytes.Equal(cond.Row, key) {
		t.Errorf("expected row %q, got %q", key, cond.Row)
	}
	if !bytes.Equal(cond.Family, []byte(cf)) {
		t.Errorf("expected family %q, got %q", cf, cond.Family)
	}
	if !bytes.Equal(cond.Qualifier, []byte(qualifier)) {
		t.Errorf("expected qualifier %q, got %q", qualifier, cond.Qualifier)
	}
	if cond.GetCompareType() != compareType {
		t.Errorf("expected compare type %v, got %v", compareType, cond.GetCompareType())
	}
	if cond.Comparator == nil {
		t.Fatal("expected Comparator to be set")
	}
	if cond.Filter != nil {
		t.Error("expected Filter to be nil for column condition")
	}
}

func TestCheckAndMutateIfNotExists(t *testing.T) {
	ctx := context.Background()
	table := []byte("table")
	key := []byte("key")
	cf := "cf"
	checkQualifier := "new_col"
	newData := []byte("newData")

	put, err := NewPut(ctx, table, key, map[string]map[string][]byte{
		cf: {checkQualifier: newData},
	})
	if err != nil {
		t.Fatal(err)
	}

	cam, err := NewCheckAndMutate(put, cf, checkQualifier, pb.CompareType_EQUAL,
		filter.NewBinaryComparator(filter.NewByteArrayComparable(nil)))
	if err != nil {
		t.Fatal(err)
	}

	if !cam.SkipBatch() {
		t.Error("expected SkipBatch to be true")
	}

	cam.SetRegion(mockRegionInfo("region"))
	req := cam.ToProto().(*pb.MutateRequest)

	assertColumnCondition(t, req.Condition, key, cf, checkQualifier, pb.CompareType_EQUAL)

	mutation := req.Mutation
	if mutation == nil {
		t.Fatal("expected Mutation to be set")
	}
	if len(mutation.ColumnValue) != 1 || len(mutation.ColumnValue[0].QualifierValue) != 1 {
		t.Fatalf("expected single column value, got %v", mutation.ColumnValue)
	}
	qv := mutation.ColumnValue[0].QualifierValue[0]
	if got := qv.Qualifier; !bytes.Equal(got, []byte(checkQualifier)) {
		t.Errorf("expected mutation qualifier %q, got %q", checkQualifier, got)
	}
	if got := qv.Value; !bytes.Equal(got, newData) {
		t.Errorf("expected mutation value %q, got %q", newData, got)
	}
}

func TestCheckAndMutateWithFilter(t *testing.T) {
	ctx := context.Background()
	table := []byte("table")
	key := []byte("key")
	rs := &pb.RegionSpecifier{
		Type:  pb.RegionSpecifier_REGION_NAME.Enum(),
		Value: []byte("region"),
	}
	cf := "cf"
	qualifier := "q"

	tests := []struct {
		name     string
		mutation func() (*Mutate, error)
		filter   filter.Filter
		wantErr  bool
	}{
		{
			name: "put with value filter",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {qualifier: []byte("value")},
				})
			},
			filter: filter.NewValueFilter(filter.NewCompareFilter(
				filter.Equal,
				filter.NewBinaryComparator(filter.NewByteArrayComparable([]byte("expected"))))),
		},
		{
			name: "delete with column prefix filter",
			mutation: func() (*Mutate, error) {
				return NewDel(ctx, table, key, map[string]map[string][]byte{
					cf: {qualifier: nil},
				})
			},
			filter: filter.NewColumnPrefixFilter([]byte("prefix")),
		},
		{
			name: "multiple qualifiers in same row with filter list",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"new_qualifier": []byte("new_value")},
				})
			},
			filter: filter.NewList(filter.MustPassAll,
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("qualifier1"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("expected1"))),
					false, false),
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("qualifier2"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("expected2"))),
					false, false),
			),
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutation, err := tt.mutation()
			if err != nil {
				t.Fatal(err)
			}

			cam, err := NewCheckAndMutateWithFilter(mutation, tt.filter)
			if tt.wantErr {
				if err == nil {
					t.Fatal("expected error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}

			if cam.Name() != "Mutate" {
				t.Errorf("expected name 'Mutate', got %q", cam.Name())
			}

			if !cam.SkipBatch() {
				t.Error("expected SkipBatch to be true")
			}

			if cam.CellBlocksEnabled() {
				t.Error("expected CellBlocksEnabled to be false")
			}

			cam.SetRegion(mockRegionInfo("region"))
			req := cam.ToProto().(*pb.MutateRequest)

			if req.Condition == nil {
				t.Fatal("expected Condition to be set")
			}

			if !bytes.Equal(req.Condition.Row, key) {
				t.Errorf("expected row %q, got %q", key, req.Condition.Row)
			}

			if req.Condition.Filter == nil {
				t.Error("expected Filter to be set")
			}

			if req.Condition.Family != nil {
				t.Error("expected Family to be nil when using filter")
			}
			if req.Condition.Qualifier != nil {
				t.Error("expected Qualifier to be nil when using filter")
			}
			if req.Condition.Comparator != nil {
				t.Error("expected Comparator to be nil when using filter")
			}

			if !proto.Equal(req.Region, rs) {
				t.Errorf("expected region %v, got %v", rs, req.Region)
			}
		})
	}
}

// TestCheckAndMutateWithFilter_SameRowManyQualifiers tests multiple updates
// to a single row with different column qualifiers.
//
// This tests that CheckAndMutate with a Filter can check multiple keys in one operation.
func TestCheckAndMutateWithFilter_SameRowManyQualifiers(t *testing.T) {
	ctx := context.Background()
	table := []byte("table_for_filter_test")
	cf := "cf"
	key := []byte("someKey")

	tests := []struct {
		name     string
		mutation func() (*Mutate, error)
		filter   filter.Filter
	}{
		{
			name: "check single qualifier exists before update",
			mutation: func() (*Mutate, error) {
				// Update a new qualifier in the same row
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"key3": []byte("value3")},
				})
			},
			filter: filter.NewSingleColumnValueFilter(
				[]byte(cf), []byte("key1"),
				filter.Equal,
				filter.NewBinaryComparator(
					filter.NewByteArrayComparable([]byte("expected_value1"))),
				false, false),
		},
		{
			name: "check multiple qualifiers with AND logic (MustPassAll) - success",
			mutation: func() (*Mutate, error) {
				// Update multiple qualifiers in the same row
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {
						"key4": []byte("value4"),
						"key5": []byte("value5"),
					},
				})
			},
			filter: filter.NewList(filter.MustPassAll,
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("key1"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("v1"))),
					false, false),
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("key2"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("v2"))),
					false, false),
			),
		},
		{
			name: "check any qualifier matches with OR logic (MustPassOne)",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"status": []byte("processed")},
				})
			},
			filter: filter.NewList(filter.MustPassOne,
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("key1"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("ready"))),
					false, false),
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("key2"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("ready"))),
					false, false),
			),
		},
		{
			name: "check qualifier exists using column prefix",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"processed:key1": []byte("done")},
				})
			},
			filter: filter.NewColumnPrefixFilter([]byte("pending:")),
		},
		{
			name: "check version count before update",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"key1": []byte("new_value")},
				})
			},
			filter: filter.NewColumnCountGetFilter(5),
		},
		{
			name: "check non-existent qualifier with filterIfMissing=false (should succeed)",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"result": []byte("mutation_applied")},
				})
			},
			filter: filter.NewSingleColumnValueFilter(
				[]byte(cf), []byte("non_existent_key"),
				filter.Equal,
				filter.NewBinaryComparator(
					filter.NewByteArrayComparable([]byte("any_value"))),
				false, false),
		},
		{
			name: "check non-existent qualifier with filterIfMissing=true (should fail)",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"result": []byte("should_not_apply")},
				})
			},
			filter: filter.NewSingleColumnValueFilter(
				[]byte(cf), []byte("non_existent_key"),
				filter.Equal,
				filter.NewBinaryComparator(
					filter.NewByteArrayComparable([]byte("any_value"))),
				true, false),
		},
		{
			name: "check multiple qualifiers with AND logic - " +
				"one non-existent with filterIfMissing=false",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"status": []byte("updated")},
				})
			},
			filter: filter.NewList(filter.MustPassAll,
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("existing_key"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("expected"))),
					false, false),
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("non_existent_key"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("any_value"))),
					false, false),
			),
		},
		{
			name: "check multiple qualifiers with AND logic - " +
				"one non-existent with filterIfMissing=true",
			mutation: func() (*Mutate, error) {
				return NewPut(ctx, table, key, map[string]map[string][]byte{
					cf: {"status": []byte("should_not_update")},
				})
			},
			filter: filter.NewList(filter.MustPassAll,
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("existing_key"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("expected"))),
					false, false),
				filter.NewSingleColumnValueFilter(
					[]byte(cf), []byte("non_existent_key"),
					filter.Equal,
					filter.NewBinaryComparator(
						filter.NewByteArrayComparable([]byte("any_value"))),
					true, false),
			),
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutation, err := tt.mutation()
			if err != nil {
				t.Fatal(err)
			}

			cam, err := NewCheckAndMutateWithFilter(mutation, tt.filter)
			if err != nil {
				t.Fatal(err)
			}

			if !cam.SkipBatch() {
				t.Error("expected SkipBatch to be true")
			}

			cam.SetRegion(mockRegionInfo("region"))
			req := cam.ToProto().(*pb.MutateRequest)

			if req.Condition == nil {
				t.Fatal("expected Condition to be set")
			}

			if !bytes.Equal(req.Condition.Row, key) {
				t.Errorf("expected row %q, got %q", key, req.Condition.Row)
			}

			if req.Condition.Filter == nil {
				t.Error("expected Filter to be set")
			}
		})
	}
}
