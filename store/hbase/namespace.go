package hbase

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/promhbase/promhbase/store"
)

// HBase namespaces. A table of namespace ns is named "ns:qualifier" in
// every operation of a Store (Put, Get, Scan, ..., CreateTable, DropTables);
// a name without a colon is a table of the namespace "default", which is
// never written out ("default:tsdb" is refused: gohbase finds that table's
// regions only as "tsdb").

// CreateNamespace creates the HBase namespace ns through the master and
// reports whether it did; an existing namespace is left alone and reported
// as false, without an error. Either way it returns only once the master
// knows the namespace, so that tables can be created in it right away, or
// with an error when it does not within Config.AdminTimeout (or ctx).
// Namespace names are letters, digits and '_'.
func (s *Store) CreateNamespace(ctx context.Context, ns string) (created bool, err error) {
	if err := checkNamespaceName(ns); err != nil {
		return false, fmt.Errorf("create namespace: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	fail := func(what string, err error) (bool, error) {
		return false, fmt.Errorf("create namespace %s: %s: %w", ns, what, classify(err, actx.Err() != nil && ctx.Err() == nil))
	}
	resp, err := s.sendMaster(actx, "CreateNamespace",
		&pb.CreateNamespaceRequest{NamespaceDescriptor: &pb.NamespaceDescriptor{Name: []byte(ns)}},
		&pb.CreateNamespaceResponse{})
	created = true
	switch {
	case remoteClass(err, "NamespaceExistException"):
		created = false // by an earlier call, or by someone else meanwhile
	case err != nil:
		return fail("create", err)
	default:
		if id, ok := procID(resp); ok {
			if err := s.waitProcedure(actx, id); err != nil {
				return fail("wait for the master's procedure", err)
			}
		}
	}
	// The master's procedure may still be running (when the namespace was
	// created by someone else, or when the answer carried no procedure):
	// the namespace is usable once the master describes it, which is the
	// check table creation makes.
	for attempt := 0; ; attempt++ {
		_, err := s.sendMaster(actx, "GetNamespaceDescriptor",
			&pb.GetNamespaceDescriptorRequest{NamespaceName: proto.String(ns)},
			&pb.GetNamespaceDescriptorResponse{})
		if err == nil {
			break
		}
		if !remoteClass(err, "NamespaceNotFoundException") {
			return fail("describe", err)
		}
		if err := sleep(actx, backoff(attempt)); err != nil {
			return fail("wait until the master knows it", err)
		}
	}
	if created {
		s.logger.Info("created hbase namespace", "namespace", ns)
	}
	return created, nil
}

// DropNamespace deletes the namespace ns, which must hold no tables any
// more (drop them first with DropTables); a namespace that does not exist
// is not an error. It waits for the master to finish. Meant for tests and
// for tearing down.
func (s *Store) DropNamespace(ctx context.Context, ns string) error {
	if err := checkNamespaceName(ns); err != nil {
		return fmt.Errorf("drop namespace: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	resp, err := s.sendMaster(actx, "DeleteNamespace",
		&pb.DeleteNamespaceRequest{NamespaceName: proto.String(ns)},
		&pb.DeleteNamespaceResponse{})
	if err == nil {
		if id, ok := procID(resp); ok {
			err = s.waitProcedure(actx, id)
		}
	}
	switch {
	case err == nil, remoteClass(err, "NamespaceNotFoundException"):
		return nil
	case remoteClass(err, "ConstraintException"): // it still holds tables
		return fmt.Errorf("drop namespace %s: %w: %w", ns, store.ErrInvalid, parseRemote(err))
	}
	return fmt.Errorf("drop namespace %s: %w", ns, classify(err, actx.Err() != nil && ctx.Err() == nil))
}

// ListNamespaceTables returns the namespaces whose names start with
// prefix, each with the qualifiers of its tables (sorted; an empty slice
// for a namespace without tables). The empty prefix selects every
// namespace, "default" and HBase's own "hbase" (with its system tables)
// among them. Tables created or dropped while it runs may or may not be
// in the answer.
func (s *Store) ListNamespaceTables(ctx context.Context, prefix string) (map[string][]string, error) {
	if prefix != "" {
		if err := checkNamespaceName(prefix); err != nil {
			return nil, fmt.Errorf("list namespace tables: prefix: %w", err)
		}
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	fail := func(what string, err error) (map[string][]string, error) {
		return nil, fmt.Errorf("list namespace tables with prefix %q: %s: %w", prefix, what, classify(err, actx.Err() != nil && ctx.Err() == nil))
	}
	resp, err := s.sendMaster(actx, "ListNamespaceDescriptors",
		&pb.ListNamespaceDescriptorsRequest{}, &pb.ListNamespaceDescriptorsResponse{})
	if err != nil {
		return fail("list namespaces", err)
	}
	out := map[string][]string{}
	for _, d := range resp.(*pb.ListNamespaceDescriptorsResponse).GetNamespaceDescriptor() {
		if ns := string(d.GetName()); strings.HasPrefix(ns, prefix) {
			out[ns] = []string{}
		}
	}
	// One listing of every namespace's tables (an empty namespace in the
	// request means all of them). The master matches the regex against
	// "ns:qualifier", or against the bare qualifier of a table of the
	// default namespace, so it narrows the answer; the namespace is checked
	// here.
	list, err := hrpc.NewListTableNames(actx, hrpc.ListRegex(quoteJavaRegex(prefix)+".*"), hrpc.ListSysTables(true))
	if err != nil {
		return nil, fmt.Errorf("list namespace tables with prefix %q: %w: %w", prefix, store.ErrInvalid, err)
	}
	names, err := s.adminClient().ListTableNames(list)
	if err != nil {
		return fail("list tables", err)
	}
	for _, n := range names {
		ns := string(n.GetNamespace())
		if ns == "" {
			ns = "default"
		}
		if strings.HasPrefix(ns, prefix) {
			out[ns] = append(out[ns], string(n.GetQualifier()))
		}
	}
	for _, tables := range out {
		slices.Sort(tables)
	}
	return out, nil
}

// qualifiedName returns the name of table name in namespace ns as a Store
// takes it: "ns:name", or name itself when ns is empty or "default".
func qualifiedName(ns, name string) string {
	if ns == "" || ns == "default" {
		return name
	}
	return ns + ":" + name
}

// masterCall is an RPC of HBase's MasterService that gohbase has no call
// for: the request and response messages are given. It borrows the
// plumbing every call needs (context, result channel, region) from an
// hrpc.CreateTable that is never sent as such.
type masterCall struct {
	*hrpc.CreateTable
	method string
	req    proto.Message
	resp   proto.Message
}

var _ hrpc.Call = (*masterCall)(nil)

// Name is the method of MasterService the call invokes.
func (c *masterCall) Name() string { return c.method }

// Description names the call in gohbase's metrics and traces.
func (c *masterCall) Description() string { return c.method }

// ToProto returns the request.
func (c *masterCall) ToProto() proto.Message { return c.req }

// NewResponse returns the message the answer is read into: always the same
// one, which proto.Unmarshal resets should gohbase send the call again.
func (c *masterCall) NewResponse() proto.Message { return c.resp }

// sendMaster sends one MasterService call through the admin client and
// returns its answer, resp filled in.
func (s *Store) sendMaster(ctx context.Context, method string, req, resp proto.Message) (proto.Message, error) {
	sender, ok := s.adminClient().(gohbase.RPCClient)
	if !ok {
		return nil, fmt.Errorf("gohbase's admin client %T cannot send %s", s.adminClient(), method)
	}
	return sender.SendRPC(&masterCall{
		CreateTable: hrpc.NewCreateTable(ctx, nil, nil),
		method:      method,
		req:         req,
		resp:        resp,
	})
}

// procID returns the id of the master's procedure that an answer of
// CreateNamespace or DeleteNamespace names. HBase 2 sends it as field 1
// (proc_id), which gohbase's older messages do not know, so it is read from
// their unknown fields.
func procID(resp proto.Message) (uint64, bool) {
	if resp == nil {
		return 0, false
	}
	b := resp.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			return v, n >= 0
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
	}
	return 0, false
}

// waitProcedure waits until the master's procedure id finished and returns
// the exception it failed with. A procedure the master no longer knows is
// taken as finished.
func (s *Store) waitProcedure(ctx context.Context, id uint64) error {
	sender, ok := s.adminClient().(gohbase.RPCClient)
	if !ok {
		return fmt.Errorf("gohbase's admin client %T cannot ask for procedure %d", s.adminClient(), id)
	}
	for attempt := 0; ; attempt++ {
		msg, err := sender.SendRPC(hrpc.NewGetProcedureState(ctx, id))
		if err != nil {
			return fmt.Errorf("procedure %d: %w", id, err)
		}
		res, ok := msg.(*pb.GetProcedureResultResponse)
		if !ok {
			return fmt.Errorf("procedure %d: answer of type %T", id, msg)
		}
		switch res.GetState() {
		case pb.GetProcedureResultResponse_NOT_FOUND:
			return nil
		case pb.GetProcedureResultResponse_FINISHED:
			if e := res.GetException(); e != nil {
				ge := e.GetGenericException()
				return fmt.Errorf("procedure %d failed: %s: %s", id, ge.GetClassName(), ge.GetMessage())
			}
			return nil
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return fmt.Errorf("procedure %d still running: %w", id, err)
		}
	}
}

// remoteClass reports whether err carries an exception HBase sent back
// whose class has the simple name class.
func remoteClass(err error, class string) bool {
	if err == nil {
		return false
	}
	re := parseRemote(err)
	return re != nil && strings.HasSuffix(re.class, "."+class)
}

// checkNamespaceName accepts HBase's namespace names: letters, digits and
// '_' (those of package tenant's names among them).
func checkNamespaceName(ns string) error {
	if ns == "" {
		return fmt.Errorf("empty namespace name: %w", store.ErrInvalid)
	}
	for _, r := range ns {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("namespace name %q: only letters, digits and '_' are allowed: %w", ns, store.ErrInvalid)
		}
	}
	return nil
}
